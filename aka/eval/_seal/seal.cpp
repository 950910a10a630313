// The sealed measurement core: the part of an evaluation that candidate Python cannot reach.
//
// Built from source at first use (aka/eval/_native.py) and loaded into the candidate
// process *before* candidate code is imported. It reads the channel key and the plan (every
// call the evaluator chose, each with a nonce) from a private descriptor that it closes,
// then runs every call itself: fresh inputs written into the same buffers for every call,
// freed memory poisoned, L2 flushed, the call timed (CUDA events or the host clock), the
// output checked for plainness and, where the plan audits it, written to a file whose keyed
// digest goes into the record. Records, samples, the key and the plan live in C++ memory
// only and leave as HMAC-signed frames on the result pipe. Python objects in this process
// never hold them, so walking frames or patching objects cannot rewrite a verdict.
//
// Native memory is reachable from Python without ctypes (numpy's ``__array_interface__``
// takes any address), so what decides a verdict across candidate calls, the channel key,
// the digest key, the timing samples and the operators charged, lives in the Vault below:
// an anonymous mapping with no access at all whenever anything but this file's plain C++
// runs; the recorder's switch and lists are read-only to everything but the core. Candidate
// code that reaches for them faults. Threat model: code that loads native code (ctypes, its
// own extension) can call mprotect itself, and the rest of this memory (the recorder's
// cache of code objects, the plan, the audits waiting in the reservoir) is reachable from
// Python; that is documented in docs/security.md and backed by the parent's own checks
// (plan coverage, audit counts, clock consistency, speed of light, keyed digests).

#include <torch/extension.h>

#include <ATen/PythonTorchFunctionTLS.h>
#include <ATen/record_function.h>
#include <c10/core/impl/DeviceGuardImplInterface.h>
#include <c10/core/impl/LocalDispatchKeySet.h>
#include <c10/core/impl/TorchDispatchModeTLS.h>

#ifdef AKA_SEAL_CUDA
#include <cuda_runtime_api.h>
#include <ATen/cuda/CUDAGraph.h>
#include <ATen/cuda/Sleep.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#endif

#include <dirent.h>
#include <fcntl.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <linux/sockios.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cerrno>
#include <cmath>
#include <functional>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <signal.h>
#include <string.h>
#include <fstream>
#include <map>
#include <mutex>
#include <numeric>
#include <set>
#include <system_error>
#include <thread>
#include <tuple>
#include <type_traits>
#include <poll.h>
#include <sched.h>
#include <string>
#include <string_view>
#include <vector>

namespace py = pybind11;

namespace {

// ---- SHA-256 and HMAC (frames are small; outputs use the keyed polynomial hash) ----------

struct Sha256 {
  uint32_t h[8];
  uint8_t buf[64];
  uint64_t len = 0;
  size_t fill = 0;
  Sha256() {
    const uint32_t init[8] = {0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
                              0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19};
    std::memcpy(h, init, sizeof(h));
  }
  static uint32_t rotr(uint32_t x, int n) { return (x >> n) | (x << (32 - n)); }
  void block(const uint8_t* p) {
    static const uint32_t k[64] = {
        0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4,
        0xab1c5ed5, 0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe,
        0x9bdc06a7, 0xc19bf174, 0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f,
        0x4a7484aa, 0x5cb0a9dc, 0x76f988da, 0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7,
        0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967, 0x27b70a85, 0x2e1b2138, 0x4d2c6dfc,
        0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85, 0xa2bfe8a1, 0xa81a664b,
        0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070, 0x19a4c116,
        0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
        0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7,
        0xc67178f2};
    uint32_t w[64];
    for (int i = 0; i < 16; i++)
      w[i] = (uint32_t(p[4 * i]) << 24) | (uint32_t(p[4 * i + 1]) << 16) |
             (uint32_t(p[4 * i + 2]) << 8) | uint32_t(p[4 * i + 3]);
    for (int i = 16; i < 64; i++) {
      uint32_t s0 = rotr(w[i - 15], 7) ^ rotr(w[i - 15], 18) ^ (w[i - 15] >> 3);
      uint32_t s1 = rotr(w[i - 2], 17) ^ rotr(w[i - 2], 19) ^ (w[i - 2] >> 10);
      w[i] = w[i - 16] + s0 + w[i - 7] + s1;
    }
    uint32_t a = h[0], b = h[1], c = h[2], d = h[3], e = h[4], f = h[5], g = h[6], hh = h[7];
    for (int i = 0; i < 64; i++) {
      uint32_t t1 = hh + (rotr(e, 6) ^ rotr(e, 11) ^ rotr(e, 25)) + ((e & f) ^ (~e & g)) + k[i] + w[i];
      uint32_t t2 = (rotr(a, 2) ^ rotr(a, 13) ^ rotr(a, 22)) + ((a & b) ^ (a & c) ^ (b & c));
      hh = g; g = f; f = e; e = d + t1; d = c; c = b; b = a; a = t1 + t2;
    }
    h[0] += a; h[1] += b; h[2] += c; h[3] += d; h[4] += e; h[5] += f; h[6] += g; h[7] += hh;
    explicit_bzero(w, sizeof w);
  }
  void update(const uint8_t* p, size_t n) {
    len += n;
    while (n) {
      size_t take = std::min(n, 64 - fill);
      std::memcpy(buf + fill, p, take);
      fill += take; p += take; n -= take;
      if (fill == 64) { block(buf); fill = 0; }
    }
  }
  void digest(uint8_t out[32]) {
    uint64_t bits = len * 8;
    uint8_t pad = 0x80;
    update(&pad, 1);
    uint8_t zero = 0;
    while (fill != 56) update(&zero, 1);
    uint8_t l[8];
    for (int i = 0; i < 8; i++) l[i] = uint8_t(bits >> (56 - 8 * i));
    update(l, 8);
    for (int i = 0; i < 8; i++)
      for (int j = 0; j < 4; j++) out[4 * i + j] = uint8_t(h[i] >> (24 - 8 * j));
  }
};

// Key material left on the stack would outlive the vault's protection: the pads and the
// hash states after them are as good as the key for signing, so they are wiped.
void wipe(void* p, size_t n) { explicit_bzero(p, n); }

// A shape's ``name=value`` fields (``fields[from:]``) as the dict ``make_inputs`` is given.
py::dict shape_fields(const std::vector<std::string>& fields, size_t from) {
  py::dict shape;
  for (size_t i = from; i < fields.size(); i++) {
    size_t eq = fields[i].find('=');
    if (eq == std::string::npos) throw std::runtime_error("seal: bad shape field " + fields[i]);
    shape[py::str(fields[i].substr(0, eq))] =
        py::int_(std::strtoll(fields[i].c_str() + eq + 1, nullptr, 10));
  }
  return shape;
}

void hmac_sha256(const uint8_t* key, size_t key_n, const std::string& msg, uint8_t out[32]) {
  uint8_t k[64] = {0};
  std::memcpy(k, key, std::min<size_t>(key_n, 64));
  uint8_t ipad[64], opad[64];
  for (int i = 0; i < 64; i++) { ipad[i] = k[i] ^ 0x36; opad[i] = k[i] ^ 0x5c; }
  uint8_t inner[32];
  Sha256 a; a.update(ipad, 64); a.update(reinterpret_cast<const uint8_t*>(msg.data()), msg.size());
  a.digest(inner);
  Sha256 b; b.update(opad, 64); b.update(inner, 32); b.digest(out);
  wipe(k, sizeof k); wipe(ipad, sizeof ipad); wipe(opad, sizeof opad);
  wipe(&a, sizeof a); wipe(&b, sizeof b);
}

void hmac_sha256(const std::string& key, const std::string& msg, uint8_t out[32]) {
  hmac_sha256(reinterpret_cast<const uint8_t*>(key.data()), key.size(), msg, out);
}

std::string hex(const uint8_t* p, size_t n) {
  static const char* d = "0123456789abcdef";
  std::string s(2 * n, '0');
  for (size_t i = 0; i < n; i++) { s[2 * i] = d[p[i] >> 4]; s[2 * i + 1] = d[p[i] & 15]; }
  return s;
}

// Keyed polynomial hash mod 2^61-1 over 32-bit words: a forger who does not know the key
// finds a second file with the same digest with probability about words / 2^61.
constexpr uint64_t kP = (uint64_t(1) << 61) - 1;
uint64_t mulmod(uint64_t a, uint64_t b) {
  unsigned __int128 r = (unsigned __int128)a * b;
  uint64_t lo = uint64_t(r & kP), hi = uint64_t(r >> 61);
  uint64_t s = lo + hi;
  return s >= kP ? s - kP : s;
}
uint64_t addmod(uint64_t a, uint64_t b) {
  uint64_t s = a + b;
  return s >= kP ? s - kP : s;
}
uint64_t powmod(uint64_t b, uint64_t e) {
  uint64_t r = 1;
  for (; e; e >>= 1, b = mulmod(b, b))
    if (e & 1) r = mulmod(r, b);
  return r;
}
// Horner over the 32-bit words [first, last) of p, from h = 0. Four words per step
// (h * key^4 + c0 * key^3 + c1 * key^2 + c2 * key + c3, with c = w + 1) give the same value
// with one multiplication on the dependency chain per four words instead of one per word.
uint64_t horner_words(const uint8_t* p, size_t first, size_t last, uint64_t key, uint64_t k2,
                      uint64_t k3, uint64_t k4) {
  uint64_t h = 0;
  size_t i = first;
  for (; i + 4 <= last; i += 4) {
    uint32_t w[4];
    std::memcpy(w, p + 4 * i, 16);
    uint64_t t = addmod(mulmod(uint64_t(w[0]) + 1, k3), mulmod(uint64_t(w[1]) + 1, k2));
    t = addmod(t, addmod(mulmod(uint64_t(w[2]) + 1, key), uint64_t(w[3]) + 1));
    h = addmod(mulmod(h, k4), t);
  }
  for (; i < last; i++) {
    uint32_t w;
    std::memcpy(&w, p + 4 * i, 4);
    h = addmod(mulmod(h, key), uint64_t(w) + 1);
  }
  return h;
}

// h = n, then h = h * key + w + 1 for every 32-bit word w, then for every trailing byte.
// Large inputs are cut into segments hashed on threads of their own and joined as
// h = h * key^len(segment) + h(segment): the same value, at memory speed rather than one
// core's multiplier throughput (outputs of hundreds of MiB cross here twice). Plain
// threads, not torch's intra-op pool: evaluation processes run with OMP_NUM_THREADS=1.
constexpr unsigned kHashThreads = 8;
uint64_t poly_hash(const uint8_t* p, size_t n, uint64_t key) {
  const uint64_t k2 = mulmod(key, key), k3 = mulmod(k2, key), k4 = mulmod(k3, key);
  const size_t words = n / 4, seg = size_t(1) << 20;  // 4 MiB per segment
  const size_t nseg = (words + seg - 1) / seg;
  std::vector<uint64_t> part(nseg, 0);
  std::atomic<size_t> next{0};
  auto work = [&] {
    for (size_t j; (j = next.fetch_add(1)) < nseg;)
      part[j] = horner_words(p, j * seg, std::min(words, (j + 1) * seg), key, k2, k3, k4);
  };
  std::vector<std::thread> helpers;
  const size_t want = std::min<size_t>(
      nseg, std::max(1u, std::min(kHashThreads, std::thread::hardware_concurrency())));
  for (size_t t = 1; t < want; t++) {
    try {
      helpers.emplace_back(work);
    } catch (const std::system_error&) {
      break;  // no more threads to be had: this thread hashes what is left
    }
  }
  work();
  for (auto& t : helpers) t.join();
  uint64_t h = n % kP;
  const uint64_t kseg = powmod(key, seg);
  for (size_t j = 0; j < nseg; j++) {
    size_t len = std::min(words, (j + 1) * seg) - j * seg;
    h = addmod(mulmod(h, len == seg ? kseg : powmod(key, len)), part[j]);
  }
  for (size_t j = words * 4; j < n; j++) h = addmod(mulmod(h, key), uint64_t(p[j]) + 1);
  return h;
}

uint64_t splitmix(uint64_t& s) {
  uint64_t z = (s += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

// ---- JSON text (records are built here, never by Python) ---------------------------------

std::string jstr(const std::string& s) {
  std::string o = "\"";
  for (unsigned char c : s) {
    if (c == '"' || c == '\\') { o += '\\'; o += char(c); }
    else if (c < 0x20) { char b[8]; snprintf(b, sizeof b, "\\u%04x", c); o += b; }
    else o += char(c);
  }
  return o + "\"";
}
std::string jnum(double v) {
  if (!std::isfinite(v)) return "null";
  char b[40]; snprintf(b, sizeof b, "%.9g", v); return b;
}
std::string jlist(const std::vector<double>& v) {
  std::string o = "[";
  for (size_t i = 0; i < v.size(); i++) o += (i ? "," : "") + jnum(v[i]);
  return o + "]";
}

// ---- the vault: what decides a verdict, out of candidate code's reach ------------------
//
// One anonymous mapping holds the channel key, the digest key, the forbidden operators
// charged to the candidate (and, doing the same work, to the baseline), the recorder's
// tamper note, and the pair being timed: its samples (both arms' windows and host times)
// and its fresh-round tags. It has no
// access at all (PROT_NONE) except inside a Vault::Open, and an Open holds only plain C++
// over it (an HMAC, a push, a copy out): never Python, never a torch operator, either of
// which can run candidate code (a finalizer, a mode). So whenever candidate code runs,
// the vault faults on every touch, from numpy over a raw address as from anything else
// short of native code calling mprotect. Its address and size are not secret; pointing
// the core elsewhere only makes it sign with a key the evaluator does not know.
#define AKA_VAULT_FAULT "aka-seal: candidate code touched the sealed core's vault"

class Vault {
 public:
  struct Head {
    uint8_t key[32];
    uint64_t digest_key;
    size_t cap, n[2], tags;
  };

  Vault() { remap(1024); }
  ~Vault() {
    size_t page = size_t(::sysconf(_SC_PAGESIZE));
    if (base_) ::munmap(base_ - page, bytes_ + 2 * page);
  }
  Vault(const Vault&) = delete;
  Vault& operator=(const Vault&) = delete;

  // Access for one scope of plain C++; every Open closes what it opened. One at a time
  // across threads: the recorder charges from any thread of a candidate call.
  class Open {
   public:
    explicit Open(Vault& v) : lock_(mu()), base_(v.base_), bytes_(v.bytes_) {
      if (::mprotect(base_, bytes_, PROT_READ | PROT_WRITE) != 0)
        throw std::runtime_error("seal: the vault could not be opened");
    }
    ~Open() {  // a vault left open would be no vault: fail closed
      if (::mprotect(base_, bytes_, PROT_NONE) != 0) std::abort();
    }
    Open(const Open&) = delete;
    Open& operator=(const Open&) = delete;

   private:
    std::lock_guard<std::mutex> lock_;
    uint8_t* base_;
    size_t bytes_;
  };

  // Inside an Open only.
  Head& head() { return *reinterpret_cast<Head*>(base_); }
  double* arr(int which) {  // 0, 1: windows of arms 0, 1; 2, 3: their host times
    return reinterpret_cast<double*>(base_ + kSamples) + size_t(which) * head().cap;
  }
  uint8_t* tag() { return base_ + kSamples + 4 * head().cap * sizeof(double); }

  // Names charged in a call (``into`` 0: the candidate's, 1: the baseline's, let go),
  // each once, up to 512 of them; the area as it stood is cleared by ``clear_ops``.
  void charge(int into, std::string_view name) {
    Open o(*this);
    uint8_t* area = base_ + (into ? kLetGo : kOps);
    uint32_t count, used;
    std::memcpy(&count, area, 4);
    std::memcpy(&used, area + 4, 4);
    size_t at = 8;
    for (uint32_t i = 0; i < count; i++) {
      uint16_t n;
      std::memcpy(&n, area + at, 2);
      if (n == name.size() && std::memcmp(area + at + 2, name.data(), n) == 0) return;
      at += 2 + n;
    }
    size_t n = std::min<size_t>(name.size(), 0xffff);
    if (count >= 512 || at + 2 + n > kOpsBytes) return;
    uint16_t n16 = uint16_t(n);
    std::memcpy(area + at, &n16, 2);
    std::memcpy(area + at + 2, name.data(), n);
    count++;
    used = uint32_t(at + 2 + n);
    std::memcpy(area, &count, 4);
    std::memcpy(area + 4, &used, 4);
  }
  void clear_ops() {
    Open o(*this);
    std::memset(base_ + kOps, 0, 8);
  }
  void clear_let_go() {
    Open o(*this);
    std::memset(base_ + kLetGo, 0, 8);
  }
  std::vector<std::string> ops() { return names(kOps); }
  // What the baseline's calls ran of what a candidate call would be charged for (a
  // timing pair's, since ``clear_let_go``): the evaluator compares it with what they run
  // in a process without candidate code, where anything more is work done in their
  // window on the candidate's behalf.
  std::vector<std::string> let_go() { return names(kLetGo); }
  std::vector<std::string> names(size_t at_area) {
    Open o(*this);
    const uint8_t* area = base_ + at_area;
    uint32_t count;
    std::memcpy(&count, area, 4);
    std::vector<std::string> out;
    size_t at = 8;
    for (uint32_t i = 0; i < count; i++) {
      uint16_t n;
      std::memcpy(&n, area + at, 2);
      out.emplace_back(reinterpret_cast<const char*>(area + at + 2), n);
      at += 2 + n;
    }
    std::sort(out.begin(), out.end());
    return out;
  }
  // What switched the recorder off, if anything did (the first note only).
  void note_tamper(const std::string& what) { note(kTamper, what); }
  std::string tamper() { return noted(kTamper); }
  // The first candidate code the sentry saw running outside the candidate's calls.
  void note_outside(const std::string& what) { note(kOutside, what); }
  std::string outside() { return noted(kOutside); }
  // The first code object the candidate made under another file's name, or source it
  // compiled.
  void note_made(const std::string& what) { note(kMade, what); }
  std::string made() { return noted(kMade); }
  // The first thread started after the core that was alive in a watched stretch.
  void note_thread(const std::string& what) { note(kThread, what); }
  std::string thread() { return noted(kThread); }

  void clear_pair() {
    Open o(*this);
    head().n[0] = head().n[1] = head().tags = 0;
  }
  // One sample of arm ``a``; the capacity doubles when it is full.
  void push(int a, double window, double host) {
    size_t need;
    {
      Open o(*this);
      if (head().n[a] < head().cap) {
        arr(a)[head().n[a]] = window;
        arr(2 + a)[head().n[a]++] = host;
        return;
      }
      need = 2 * head().cap;
    }
    remap(need);
    push(a, window, host);
  }
  // The end of a round: its fresh-round tag; returns the rounds so far.
  size_t end_round(int t) {
    size_t need;
    {
      Open o(*this);
      if (head().tags < head().cap) {
        tag()[head().tags++] = uint8_t(t);
        return head().n[0];
      }
      need = 2 * head().cap;
    }
    remap(need);
    return end_round(t);
  }
  std::vector<double> samples(int which) {
    Open o(*this);
    size_t n = head().n[which % 2];
    return std::vector<double>(arr(which), arr(which) + n);
  }
  std::vector<int> tags() {
    Open o(*this);
    return std::vector<int>(tag(), tag() + head().tags);
  }
  size_t rounds() {
    Open o(*this);
    return head().n[0];
  }
  bool holds(const void* p) const {
    auto a = reinterpret_cast<uintptr_t>(p), b = reinterpret_cast<uintptr_t>(base_);
    return base_ && a >= b && a < b + bytes_;
  }

 private:
  static constexpr size_t kHead = 128, kOpsBytes = 32768, kNoteBytes = 512;
  static constexpr size_t kOps = kHead, kLetGo = kOps + kOpsBytes, kTamper = kLetGo + kOpsBytes;
  static constexpr size_t kOutside = kTamper + kNoteBytes, kMade = kOutside + kNoteBytes;
  static constexpr size_t kThread = kMade + kNoteBytes;
  static constexpr size_t kSamples = kThread + kNoteBytes;  // then the samples
  static_assert(sizeof(Head) <= kHead, "the vault's head outgrew its slot");
  static std::mutex& mu() {
    static std::mutex m;
    return m;
  }

  void note(size_t at, const std::string& what) {  // the first note at ``at`` only
    Open o(*this);
    char* note = reinterpret_cast<char*>(base_ + at);
    if (note[0]) return;
    size_t n = std::min(what.size(), kNoteBytes - 1);
    std::memcpy(note, what.data(), n);
    note[n] = 0;
  }
  std::string noted(size_t at) {
    Open o(*this);
    return std::string(reinterpret_cast<const char*>(base_ + at));
  }

  // A new mapping of ``cap`` samples per array holding what the old one held.
  void remap(size_t cap) {
    size_t page = size_t(::sysconf(_SC_PAGESIZE));
    size_t bytes = (kSamples + 4 * cap * sizeof(double) + cap + page - 1) / page * page;
    // A read-only page on either side: the vault's own pages, closed or open, never merge
    // with a neighbouring mapping (each open and close would split it again).
    void* m = ::mmap(nullptr, bytes + 2 * page, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED) throw std::runtime_error("seal: cannot map the vault");
    uint8_t* nb = static_cast<uint8_t*>(m) + page;
    if (::mprotect(nb, bytes, PROT_READ | PROT_WRITE) != 0) throw std::runtime_error("seal: cannot map the vault");
    Head* nh = reinterpret_cast<Head*>(nb);
    *nh = Head{};
    if (base_) {
      Open o(*this);
      Head& old = head();
      std::memcpy(nb, base_, kSamples);  // the head, the charged operators, the note
      for (int w = 0; w < 4; w++)
        std::memcpy(reinterpret_cast<double*>(nb + kSamples) + size_t(w) * cap, arr(w),
                    old.n[w % 2] * sizeof(double));
      std::memcpy(nb + kSamples + 4 * cap * sizeof(double), tag(), old.tags);
      wipe(base_, bytes_);
    }
    nh->cap = cap;
    if (base_) ::munmap(base_ - page, bytes_ + 2 * page);
    base_ = nb;
    bytes_ = bytes;
    if (::mprotect(base_, bytes_, PROT_NONE) != 0) throw std::runtime_error("seal: vault mprotect failed");
    advise();
  }

 public:
  // From now on a process forked from this one finds the vault zeroed (its key, samples
  // and charges gone): the harness's own forks (the drawer, the timer) are made before,
  // holding the key they seal with, and a fork of the candidate's read the key from its
  // copy through its own ``/proc/PID/mem`` and signed a timing frame of its own. Kept for
  // every mapping after (``remap``). Returns what was done.
  std::string forget_on_fork() {
    wipe_on_fork_ = true;
    return advise();
  }

 private:
  std::string advise() {
    if (!wipe_on_fork_) return "";
#ifdef MADV_WIPEONFORK
    if (::madvise(base_, bytes_, MADV_WIPEONFORK) == 0) return "the vault wiped in forks";
#endif
    if (::madvise(base_, bytes_, MADV_DONTFORK) == 0) return "the vault left out of forks";
    return std::string("the vault kept in forks: ") + std::strerror(errno);
  }

  bool wipe_on_fork_ = false;
  uint8_t* base_ = nullptr;
  size_t bytes_ = 0;
};


// ---- which forbidden library operators ran inside candidate calls -----------------------
//
// A RecordFunction callback sees every ATen operator of the calling thread. It is on for
// every candidate call, checked or timed alike: what the candidate can measure of it (its
// cost per operator) is the same in both, so nothing there tells a timed call from a checked
// one, and a library call made only when timed is seen like any other. Only operators the
// task forbids are looked at further (the rest cost one lookup). It stays on through the
// baseline's timed calls too, doing the same work and keeping nothing, so both arms of a pair
// pay alike (task code around the kernel calls the same forbidden operators in both).

// What the recorder decides by lives where candidate code cannot write it: the names it
// looks operators and files up in, frozen once the plan is read (read-only memory), and
// its switch, in a page of its own that is writable only while the core flips it. What it
// charges goes to the vault. Memory that candidate code could write (through a raw
// address, with no ctypes) would let it switch the recorder off for its own calls, or
// empty the forbidden list, and call the library unseen.

// A sorted list of names in read-only memory.
struct Names {
  const char* blob = nullptr;
  const uint32_t* at = nullptr;  // start and length of each name in ``blob``
  uint32_t n = 0;
  std::string_view get(uint32_t i) const { return {blob + at[2 * i], at[2 * i + 1]}; }
  bool has(std::string_view name) const {
    uint32_t lo = 0, hi = n;
    while (lo < hi) {
      uint32_t mid = (lo + hi) / 2;
      int c = get(mid).compare(name);
      if (c == 0) return true;
      if (c < 0) lo = mid + 1; else hi = mid;
    }
    return false;
  }
};

// The plan's calls and pairs: plain records, frozen with the lists once the plan is read.
struct Call {  // one correctness call the evaluator asked for
  char nonce[32] = {};  // NUL-terminated
  int shape = 0, dtype = 0;
  int64_t seed = 0;
  int poison = 0;
};

struct Pair {  // one timing pair (baseline vs candidate) the evaluator asked for
  int shape = 0, dtype = 0;
  int64_t seed = 0;
  double rel_ci = 0.005, max_time = 1.0, spin_s = 20e-6, graph_below = 100e-6, flush_factor = 2;
  int min_samples = 5, max_samples = 5000, warmup = 3, graph = 2, audit_permille = 50, audit_max = 8;
  int64_t flush_bytes = 0, audit_bytes = 0, audit_sample = 0;
  double fresh_max_s = 0.0005;
};
static_assert(std::is_trivially_copyable_v<Call> && std::is_trivially_copyable_v<Pair>,
              "the plan's records are copied into read-only memory byte for byte");

// The recorder's switch and lists, one page, read-only but while the core flips the switch.
struct alignas(4096) Switch {
  // 0 off, 1 a candidate call, 2 the recorder's own probe, 3 a baseline call (the same
  // work as a candidate call, its findings let go: both arms of a timing pair pay alike,
  // and task code around the kernel calls the same forbidden operators in both)
  std::atomic<int> mode{0};
  std::thread::id call_thread;
  Vault* vault = nullptr;  // where charges go
  Names forbidden;  // the plan's ``F`` lines
  // The plan's ``A`` lines: when there are any, every operator *not* among them is
  // charged (a task whose kernel may call the library only for plumbing: ``operators:
  // plumbing``), so an operator no forbidden list names is seen like a listed one.
  Names allowed;
  Names task_files;  // ``T``: frames from these files are the task's own code
  Names libraries;  // ``L``: ...and frames under these are a library's
  Names editable;  // ``E``: ...and frames from these are the candidate's
  const void* lists = nullptr;  // the mapping the names live in
  size_t lists_bytes = 0;
  // The plan's correctness calls and timing pairs, in a read-only mapping of their own:
  // written through a raw address, a pair's shape, sample bounds or audit share would
  // time another call than the evaluator asked for.
  const Call* calls = nullptr;
  const Pair* pairs = nullptr;
  uint32_t n_calls = 0, n_pairs = 0;
  const void* plan = nullptr;
  size_t plan_bytes = 0;
  // The recorder's table of what each code object is (``CodeTable``), read-only but while
  // the core adds an entry: a code object of the candidate's passed off as a library's
  // would make its forbidden calls a library's own.
  uint8_t* codes = nullptr;
  size_t codes_bytes = 0;
  // The sentry (below): whether candidate code running now is outside its calls, and
  // where (``kWatch...``); whether the plan is under way; the frame evaluator it wraps.
  int watch = 0;
  bool armed = false;
  void* prev_eval = nullptr;
};
static_assert(sizeof(Switch) == 4096, "the recorder's switch must fill its page alone");
// Between two pages with no access: flipping the switch's page then never merges it with
// its neighbours' mapping, which would make every flip split it again (about twice the
// cost of an mprotect on a page of its own).
struct alignas(4096) Guarded {
  char lo[4096];
  Switch sw;
  char hi[4096];
};
Guarded g_guarded;
constexpr Switch& g_sw = g_guarded.sw;

void protect_switch(int prot) {
  if (::mprotect(&g_sw, sizeof g_sw, prot) != 0) std::abort();
}

// Where candidate code may not run (the sentry's ``watch``): nowhere (0; a candidate
// call, or before and after the plan), while the reference draws inputs, in a baseline
// call, between calls.
constexpr int kWatchOff = 0, kWatchInputs = 1, kWatchBaseline = 2, kWatchBetween = 3;
void watch_frames(int watch);  // the sentry's frame evaluator in or out (below)

// The switch flipped (and the calling thread noted) from the core only, outside any
// candidate code; read-only again before the next line of anyone else's runs.
void set_mode(int mode, int watch) {
  protect_switch(PROT_READ | PROT_WRITE);
  g_sw.mode.store(mode);
  g_sw.call_thread = std::this_thread::get_id();
  watch_frames(g_sw.armed ? watch : kWatchOff);
  protect_switch(PROT_READ);
}
void set_armed(bool armed) {
  protect_switch(PROT_READ | PROT_WRITE);
  g_sw.armed = armed;
  watch_frames(armed ? kWatchBetween : kWatchOff);
  protect_switch(PROT_READ);
}
struct Recording {  // the switch at ``mode`` (and the sentry at ``watch``) for one scope
  Recording(int mode, int watch) { set_mode(mode, watch); }
  ~Recording() { set_mode(0, kWatchBetween); }
  Recording(const Recording&) = delete;
  Recording& operator=(const Recording&) = delete;
};

// The plan's calls and pairs, copied into a mapping of their own that is then read-only.
void freeze_plan(const std::vector<Call>& calls, const std::vector<Pair>& pairs) {
  size_t page = size_t(::sysconf(_SC_PAGESIZE));
  size_t at = calls.size() * sizeof(Call);
  at = (at + alignof(Pair) - 1) / alignof(Pair) * alignof(Pair);
  size_t size = (at + pairs.size() * sizeof(Pair) + page) / page * page;
  void* m = ::mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (m == MAP_FAILED) throw std::runtime_error("seal: cannot map the plan");
  auto* bytes = static_cast<uint8_t*>(m);
  if (!calls.empty()) std::memcpy(bytes, calls.data(), calls.size() * sizeof(Call));
  if (!pairs.empty()) std::memcpy(bytes + at, pairs.data(), pairs.size() * sizeof(Pair));
  if (::mprotect(m, size, PROT_READ) != 0) throw std::runtime_error("seal: cannot freeze the plan");
  g_sw.calls = reinterpret_cast<const Call*>(bytes);
  g_sw.pairs = reinterpret_cast<const Pair*>(bytes + at);
  g_sw.n_calls = uint32_t(calls.size());
  g_sw.n_pairs = uint32_t(pairs.size());
  g_sw.plan = m;
  g_sw.plan_bytes = size;
}

void map_codes();

// Everything the recorder and the timer decide by, frozen once the plan is read: the lists
// (sorted names back to back in a read-only mapping), the calls and pairs, the code table;
// their descriptors in the switch's page, read-only from here on.
void freeze(Vault* vault, std::vector<std::vector<std::string>> lists, const std::vector<Call>& calls,
            const std::vector<Pair>& pairs) {
  freeze_plan(calls, pairs);
  map_codes();
  size_t bytes = 0, names = 0;
  for (auto& l : lists) {
    std::sort(l.begin(), l.end());
    l.erase(std::unique(l.begin(), l.end()), l.end());
    for (auto& n : l) bytes += n.size();
    names += l.size();
  }
  size_t page = size_t(::sysconf(_SC_PAGESIZE));
  size_t size = (names * 8 + bytes + page) / page * page;
  void* m = ::mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (m == MAP_FAILED) throw std::runtime_error("seal: cannot map the recorder's lists");
  uint32_t* at = static_cast<uint32_t*>(m);
  char* blob = static_cast<char*>(m) + names * 8;
  Names* into[] = {&g_sw.forbidden, &g_sw.allowed, &g_sw.task_files, &g_sw.libraries, &g_sw.editable};
  size_t k = 0, off = 0;
  for (size_t li = 0; li < lists.size(); li++) {
    *into[li] = Names{blob, at + 2 * k, uint32_t(lists[li].size())};
    for (auto& n : lists[li]) {
      at[2 * k] = uint32_t(off);
      at[2 * k + 1] = uint32_t(n.size());
      std::memcpy(blob + off, n.data(), n.size());
      off += n.size();
      k++;
    }
  }
  if (::mprotect(m, size, PROT_READ) != 0) throw std::runtime_error("seal: cannot freeze the recorder's lists");
  g_sw.vault = vault;
  g_sw.lists = m;
  g_sw.lists_bytes = size;
  if (::mprotect(g_guarded.lo, sizeof g_guarded.lo, PROT_NONE) != 0 ||
      ::mprotect(g_guarded.hi, sizeof g_guarded.hi, PROT_NONE) != 0)
    throw std::runtime_error("seal: cannot guard the recorder's switch");
  protect_switch(PROT_READ);
}

// A fault inside the vault, the recorder's switch or its lists is candidate code reaching
// for them: said as the last line on stderr (the evaluator reads the tail of a process
// that died), then the default action. Any other fault goes to the handler before this
// one (Python's faulthandler, say). Where they are is read from the switch's page, which
// candidate code cannot point elsewhere.
struct sigaction g_prev_segv, g_prev_bus;
void on_fault(int sig, siginfo_t* info, void* ctx) {
  const Vault* v = g_sw.vault;
  uintptr_t at = info ? reinterpret_cast<uintptr_t>(info->si_addr) : 0;
  auto within = [at](const void* base, size_t n) {
    auto b = reinterpret_cast<uintptr_t>(base);
    return base && at >= b && at < b + n;
  };
  if (info && ((v && v->holds(info->si_addr)) || within(&g_sw, sizeof g_sw) ||
               within(g_sw.lists, g_sw.lists_bytes) || within(g_sw.plan, g_sw.plan_bytes) ||
               within(g_sw.codes, g_sw.codes_bytes))) {
    static const char msg[] = "\n" AKA_VAULT_FAULT "\n";
    ssize_t ignored = ::write(2, msg, sizeof msg - 1);
    (void)ignored;
    ::signal(sig, SIG_DFL);
    ::raise(sig);
    return;
  }
  struct sigaction& prev = sig == SIGSEGV ? g_prev_segv : g_prev_bus;
  if (prev.sa_flags & SA_SIGINFO) {
    if (prev.sa_sigaction) { prev.sa_sigaction(sig, info, ctx); return; }
  } else if (prev.sa_handler != SIG_DFL && prev.sa_handler != SIG_IGN) {
    prev.sa_handler(sig);
    return;
  }
  ::signal(sig, SIG_DFL);
  ::raise(sig);
}
void watch_faults() {
  struct sigaction sa {};
  sa.sa_sigaction = on_fault;
  sa.sa_flags = SA_SIGINFO | SA_ONSTACK;
  sigemptyset(&sa.sa_mask);
  ::sigaction(SIGSEGV, &sa, &g_prev_segv);
  ::sigaction(SIGBUS, &sa, &g_prev_bus);
}

// ---- other processes, out of the candidate's reach ----------------------------------
//
// Every evaluation process runs as the same user, and on a GPU without a PID namespace of
// its own (the driver does not start in one under gVisor) a candidate sees every other
// process in /proc. Whatever the kernel lets one process of a user do to another, it could
// do to its neighbours: stop or kill another evaluation's candidate or checker (in a
// trainer's group of samples in flight, the rewards of its rivals), the clean timing of its
// own baseline or the evaluator itself; lower their CPU or I/O priority, pin them to one
// core, shrink their resource limits; make a descriptor of its own signal them when ready.
// ``signal.pidfd_send_signal`` does the first with no audit event at all. A seccomp filter, installed on every thread before candidate code is imported and
// inherited by all it starts, refuses with EPERM every such call aimed at anything but
// this process (pid 0, "myself", where the call allows it; never a process group, never
// every process of the user): the kernel decides, not Python. Calls of another ABI (x32,
// i386 through ``int 0x80``) are refused whole: they would name the same calls by other
// numbers.

struct Bpf {
  std::vector<sock_filter> code;
  void op(uint16_t c, uint32_t k, uint8_t jt = 0, uint8_t jf = 0) {
    code.push_back(sock_filter{c, jt, jf, k});
  }
  void load_nr() { op(BPF_LD | BPF_W | BPF_ABS, offsetof(seccomp_data, nr)); }
  void load_arg(int i) {  // the low word: the kernel reads a pid_t (int) argument so
    op(BPF_LD | BPF_W | BPF_ABS, uint32_t(offsetof(seccomp_data, args) + 8 * i));
  }
  void ret(uint32_t what) { op(BPF_RET | BPF_K, what); }
};

constexpr uint32_t kRefuse = SECCOMP_RET_ERRNO | (EPERM & SECCOMP_RET_DATA);
#if defined(__x86_64__)
constexpr uint32_t kArch = AUDIT_ARCH_X86_64;
#elif defined(__aarch64__)
constexpr uint32_t kArch = AUDIT_ARCH_AARCH64;
#else
constexpr uint32_t kArch = 0;  // an architecture no filter here is written for
#endif

// A filter's first instructions: calls made under another architecture's numbers are
// refused whole (they would name the same calls by other numbers).
void arch_only(Bpf& b) {
  b.op(BPF_LD | BPF_W | BPF_ABS, offsetof(seccomp_data, arch));
  b.op(BPF_JMP | BPF_JEQ | BPF_K, kArch, 1, 0);
  b.ret(kRefuse);
}
constexpr uint32_t kIoprioWhoProcess = 1;  // linux/ioprio.h, absent from older headers

// A rule's last five instructions: allowed if argument ``arg`` is 0 or this process,
// else refused.
void zero_or_self(Bpf& b, int arg, uint32_t self) {
  b.load_arg(arg);
  b.op(BPF_JMP | BPF_JEQ | BPF_K, 0, 2, 0);
  b.op(BPF_JMP | BPF_JEQ | BPF_K, self, 1, 0);
  b.ret(kRefuse);
  b.ret(SECCOMP_RET_ALLOW);
}

// ``nr`` is refused unless argument ``arg`` is this process (or 0 with ``zero``).
void only_self(Bpf& b, long nr, int arg, bool zero, uint32_t self) {
  b.load_nr();
  b.op(BPF_JMP | BPF_JEQ | BPF_K, uint32_t(nr), 0, zero ? 5 : 4);
  if (zero) return zero_or_self(b, arg, self);
  b.load_arg(arg);
  b.op(BPF_JMP | BPF_JEQ | BPF_K, self, 1, 0);
  b.ret(kRefuse);
  b.ret(SECCOMP_RET_ALLOW);
}

void never(Bpf& b, long nr) {
  b.load_nr();
  b.op(BPF_JMP | BPF_JEQ | BPF_K, uint32_t(nr), 0, 1);
  b.ret(kRefuse);
}

// ``nr(which, who, ...)`` is refused unless it names one process (``which`` is ``one``)
// and that process is this one (``who`` 0 or itself): never a process group, never every
// process of the user.
void only_self_who(Bpf& b, long nr, uint32_t one, uint32_t self) {
  b.load_nr();
  b.op(BPF_JMP | BPF_JEQ | BPF_K, uint32_t(nr), 0, 7);
  b.load_arg(0);
  b.op(BPF_JMP | BPF_JEQ | BPF_K, one, 0, 3);  // to the refusal
  zero_or_self(b, 1, self);
}

// A descriptor's owner is whom the kernel signals (SIGIO, or any signal ``F_SETSIG``
// picks) when it is ready: ``fcntl(fd, F_SETOWN, pid)`` with ``O_ASYNC`` is a ``kill``
// the kernel sends on the candidate's behalf. The owner may be this process only (0
// clears it); ``F_SETOWN_EX`` and the sockets' ``FIOSETOWN``/``SIOCSPGRP`` name it in
// memory a filter cannot read, so they are refused outright.
void own_descriptors_only(Bpf& b, uint32_t self) {
  b.load_nr();
  b.op(BPF_JMP | BPF_JEQ | BPF_K, uint32_t(SYS_fcntl), 0, 8);
  b.load_arg(1);
  b.op(BPF_JMP | BPF_JEQ | BPF_K, F_SETOWN_EX, 4, 0);  // to the refusal
  b.op(BPF_JMP | BPF_JEQ | BPF_K, F_SETOWN, 0, 4);     // any other command: allowed
  zero_or_self(b, 2, self);
  b.load_nr();
  b.op(BPF_JMP | BPF_JEQ | BPF_K, uint32_t(SYS_ioctl), 0, 4);
  b.load_arg(1);
  b.op(BPF_JMP | BPF_JEQ | BPF_K, FIOSETOWN, 1, 0);
  b.op(BPF_JMP | BPF_JEQ | BPF_K, SIOCSPGRP, 0, 1);
  b.ret(kRefuse);
}

// Installs the filter ``b`` holds, on every thread at once (``every_thread``: TSYNC) or on
// this one and its heirs; "" once it holds, else the step that failed and why.
std::string install_filter(Bpf& b, bool every_thread) {
  sock_fprog prog{uint16_t(b.code.size()), b.code.data()};
  if (::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0)
    return std::string("no_new_privs: ") + std::strerror(errno);
  unsigned flags = every_thread ? SECCOMP_FILTER_FLAG_TSYNC : 0;
  if (::syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, flags, &prog) == 0) return "";
  return std::string("seccomp: ") + std::strerror(errno);
}

std::string confine_others() {
  if (!kArch) return "other processes not confined: an architecture the filter does not know";
  uint32_t self = uint32_t(::getpid());
  Bpf b;
  arch_only(b);
#if defined(__x86_64__)
  b.load_nr();
  b.op(BPF_JMP | BPF_JGE | BPF_K, 0x40000000u, 0, 1);  // the x32 ABI's numbers
  b.ret(kRefuse);
#endif
  only_self(b, SYS_kill, 0, false, self);  // 0 and negative pids are process groups
  only_self(b, SYS_tkill, 0, false, self);
  only_self(b, SYS_tgkill, 0, false, self);
  only_self(b, SYS_rt_sigqueueinfo, 0, false, self);
  only_self(b, SYS_rt_tgsigqueueinfo, 0, false, self);
#ifdef SYS_pidfd_open  // newer than some C libraries' headers
  only_self(b, SYS_pidfd_open, 0, false, self);
#endif
#ifdef SYS_pidfd_send_signal  // newer than some C libraries' headers
  never(b, SYS_pidfd_send_signal);  // also takes a /proc/PID folder opened by path
#endif
#ifdef SYS_pidfd_getfd  // newer than some C libraries' headers
  never(b, SYS_pidfd_getfd);
#endif
  never(b, SYS_ptrace);
  // never, not even on itself: on its own memory they fail with EFAULT where a touch of
  // the vault faults, a probe that would let a thread wait for the vault to open unseen
  never(b, SYS_process_vm_readv);
  never(b, SYS_process_vm_writev);
  only_self(b, SYS_prlimit64, 0, true, self);
  only_self(b, SYS_sched_setaffinity, 0, true, self);
  only_self(b, SYS_sched_setscheduler, 0, true, self);
  only_self(b, SYS_sched_setparam, 0, true, self);
#ifdef SYS_sched_setattr  // newer than some C libraries' headers
  only_self(b, SYS_sched_setattr, 0, true, self);
#endif
  only_self_who(b, SYS_setpriority, PRIO_PROCESS, self);
  only_self_who(b, SYS_ioprio_set, kIoprioWhoProcess, self);
  own_descriptors_only(b, self);
  b.ret(SECCOMP_RET_ALLOW);
  // every thread at once (CUDA's and torch's started already), else this one and its heirs
  std::string every = install_filter(b, true);
  if (every.empty()) return "other processes out of reach (seccomp)";
  if (every.rfind("seccomp: ", 0) == 0 && install_filter(b, false).empty())
    return "other processes out of reach of this thread and its heirs (seccomp; every thread: " +
           every.substr(9) + ")";
  return "other processes not confined: " + every;
}

// No thread started after this, in this process or what it starts (a CPU evaluation's,
// installed last before the candidate's import): every thread reads and writes the
// process's memory through a ``/proc/TID/mem`` file of its own, which ignores page
// protections, and a thread's file opened before it ends stays open after; the files of
// the threads alive when the process was contained are covered
// (``aka.eval._contain.hide``), a new one's could not be. ``clone`` with ``CLONE_THREAD``
// fails as a process out of threads does (EAGAIN; the core's hashing then works on one
// thread), ``clone3`` as a kernel without it (ENOSYS: the C library falls back to
// ``clone``, whose flags a filter can read), and processes may still be started.
std::string no_new_threads() {
  if (!kArch) return "threads not confined: an architecture the filter does not know";
  Bpf b;
  arch_only(b);
#ifdef SYS_clone3  // newer than some C libraries' headers
  b.load_nr();
  b.op(BPF_JMP | BPF_JEQ | BPF_K, uint32_t(SYS_clone3), 0, 1);
  b.ret(SECCOMP_RET_ERRNO | (ENOSYS & SECCOMP_RET_DATA));
#endif
  b.load_nr();
  b.op(BPF_JMP | BPF_JEQ | BPF_K, uint32_t(SYS_clone), 0, 3);
  b.load_arg(0);  // the flags' low word
  b.op(BPF_JMP | BPF_JSET | BPF_K, uint32_t(CLONE_THREAD), 0, 1);
  b.ret(SECCOMP_RET_ERRNO | (EAGAIN & SECCOMP_RET_DATA));
  b.ret(SECCOMP_RET_ALLOW);
  std::string error = install_filter(b, true);
  return error.empty() ? "no new threads (seccomp)" : "threads not confined: " + error;
}

std::atomic<bool> g_alive{false};
thread_local int t_depth = 0;
// Candidate calls that returned, and those of them in which no Triton kernel launched:
// the launch hook (``aka.eval._kernels.LaunchCounter``) calls ``launched`` from inside
// every launch. Counted over every call of the plan, checked and timed alike, so a kernel
// that launches only when it is probed (fresh tensors after the plan) is seen skipping.
std::atomic<bool> g_launched{false};
std::atomic<long> g_returned{0}, g_unlaunched{0};
// The launch hook's code object (``LaunchCounter``'s wrapper of Triton's ``run``), given
// once before candidate code is imported: ``launched`` counts a call only from a frame of
// that code. The candidate reaches ``launched`` itself (through the harness's frames; a
// red-team file called it in every plan call and launched no kernel at all), so a call
// from any other frame is not a launch but a forged one, noted (first only) for the
// verdict (``no_kernel_launch``, from the core's last frame).
PyObject* g_hook_code = nullptr;
std::string g_forged_launch;

// The first process in this evaluation's PID namespace that is neither this process nor
// one of the harness's (``harness``: the input drawer and the baseline's timer): a process
// the candidate started, looked for after every candidate call. A red-team helper started
// with ``_posixsubprocess.fork_exec`` (no audit event) and ``SIGCHLD`` ignored (so no child
// was left for the harness's Python to count at its stages) ran beside the whole plan.
// Only as PID 1 of its own namespace with its own ``/proc`` (the CPU's default; a CUDA
// evaluation has neither) does ``/proc`` list this evaluation's processes and no others;
// ``readdir`` lists processes, not threads.
std::string g_stray_process;
void census(const std::vector<int>& harness) {
  if (!g_stray_process.empty() || ::getpid() != 1) return;
  char self[16] = {0};
  if (::readlink("/proc/self", self, sizeof(self) - 1) != 1 || self[0] != '1') return;
  DIR* d = ::opendir("/proc");
  if (!d) return;
  while (struct dirent* e = ::readdir(d)) {
    if (e->d_name[0] < '1' || e->d_name[0] > '9') continue;
    int pid = std::atoi(e->d_name);
    if (pid == 1 || std::find(harness.begin(), harness.end(), pid) != harness.end()) continue;
    std::string comm = "?";
    int fd = ::open(("/proc/" + std::to_string(pid) + "/comm").c_str(), O_RDONLY | O_CLOEXEC);
    if (fd >= 0) {
      char buf[64];
      ssize_t n = ::read(fd, buf, sizeof(buf) - 1);
      ::close(fd);
      if (n > 0) comm.assign(buf, size_t(buf[n - 1] == '\n' ? n - 1 : n));
    }
    g_stray_process = "process " + std::to_string(pid) + " (" + comm +
                      ") beside the evaluation after a candidate call";
    break;
  }
  ::closedir(d);
}
void note_tamper(const std::string& what) {
  if (g_sw.vault) g_sw.vault->note_tamper(what);
}

bool library_file(const std::string& name) {
  if (name.empty() || name[0] == '<') return true;
  if (name.find("/site-packages/") != std::string::npos ||
      name.find("/dist-packages/") != std::string::npos)
    return true;
  for (uint32_t i = 0; i < g_sw.libraries.n; i++) {
    std::string_view prefix = g_sw.libraries.get(i);
    if (name.compare(0, prefix.size(), prefix) == 0) return true;
  }
  return false;
}

// What a code object's frames are, read once per code object: its file's kind, a digest of
// its bytecode (the same function in another copy of a file, the baseline's tree, has the
// same one) and, for the task's own files, ``file:line:function`` (the parent strips the
// folder). Every code object looked up is kept alive here, so its address is never
// another's; reading it again for every operator made each of them cost microseconds in
// both arms of a timing pair.
enum class Kind : uint8_t { kLibrary, kTask, kEditable, kOther };
struct CodeInfo {
  Kind kind;
  uint64_t digest;
  std::string where;  // the task's files only
};

uint64_t fnv(uint64_t h, const void* p, size_t n) {  // FNV-1a
  for (size_t i = 0; i < n; i++) h = (h ^ static_cast<const uint8_t*>(p)[i]) * 1099511628211ULL;
  return h;
}
constexpr uint64_t kFnvBasis = 1469598103934665603ULL;

// The table of code objects read so far: open addressing in a mapping of its own, between
// guard pages, read-only but while ``code_info`` adds an entry (under the GIL, with no
// Python running until it is read-only again). Where it lies is in the switch's page.
constexpr size_t kMaxCodes = 1 << 16;
constexpr size_t kCodeSlots = kMaxCodes * 2;  // at most half full: probes stay short
constexpr size_t kWhereBytes = size_t(4) << 20;  // the task files' ``file:line:function``
struct CodeSlot {
  PyCodeObject* code;  // null: free
  uint64_t digest;
  uint32_t where_at;
  uint16_t where_n;
  Kind kind;
};
struct CodeHead {
  size_t n, where_used;
};
size_t code_page() { return size_t(::sysconf(_SC_PAGESIZE)); }
CodeHead& code_head() { return *reinterpret_cast<CodeHead*>(g_sw.codes); }
CodeSlot* code_slots() { return reinterpret_cast<CodeSlot*>(g_sw.codes + code_page()); }
char* code_where() { return reinterpret_cast<char*>(code_slots() + kCodeSlots); }

void map_codes() {
  size_t page = code_page();
  size_t size = (page + kCodeSlots * sizeof(CodeSlot) + kWhereBytes + page - 1) / page * page;
  void* m = ::mmap(nullptr, size + 2 * page, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
                   -1, 0);
  if (m == MAP_FAILED) throw std::runtime_error("seal: cannot map the recorder's code table");
  g_sw.codes = static_cast<uint8_t*>(m) + page;
  g_sw.codes_bytes = size;
  if (::mprotect(g_sw.codes, size, PROT_READ) != 0)
    throw std::runtime_error("seal: cannot map the recorder's code table");
}

size_t code_hash(const PyCodeObject* code) {
  return size_t((uint64_t(reinterpret_cast<uintptr_t>(code)) >> 4) * 0x9E3779B97F4A7C15ULL >> 47) %
         kCodeSlots;
}

const CodeSlot* find_code(const PyCodeObject* code) {
  for (size_t i = code_hash(code);; i = (i + 1) % kCodeSlots) {
    const CodeSlot& s = code_slots()[i];
    if (s.code == code) return &s;
    if (s.code == nullptr) return nullptr;
  }
}

void protect_codes(int prot) {
  if (::mprotect(g_sw.codes, g_sw.codes_bytes, prot) != 0) std::abort();
}

// Adds ``code`` as ``info`` and keeps it alive (its address is never another's); false when
// the table is full (the caller uses ``info`` uncached).
bool add_code(PyCodeObject* code, const CodeInfo& info) {
  CodeHead& h = code_head();
  if (h.n >= kMaxCodes || h.where_used + info.where.size() > kWhereBytes || info.where.size() > 0xffff)
    return false;
  size_t i = code_hash(code);
  while (code_slots()[i].code != nullptr) i = (i + 1) % kCodeSlots;
  Py_INCREF(reinterpret_cast<PyObject*>(code));
  protect_codes(PROT_READ | PROT_WRITE);
  std::memcpy(code_where() + h.where_used, info.where.data(), info.where.size());
  code_slots()[i] = CodeSlot{code, info.digest, uint32_t(h.where_used), uint16_t(info.where.size()),
                             info.kind};
  h.where_used += info.where.size();
  h.n++;
  protect_codes(PROT_READ);
  return true;
}

CodeInfo read_code(PyCodeObject* code) {
  PyObject* obj = reinterpret_cast<PyObject*>(code);
  PyObject* fn = PyObject_GetAttrString(obj, "co_filename");
  const char* c = fn ? PyUnicode_AsUTF8(fn) : nullptr;
  std::string name = c ? c : "";
  Py_XDECREF(fn);
  CodeInfo info{Kind::kOther, kFnvBasis, ""};
  PyObject* bytes = PyCode_GetCode(code);
  if (bytes && PyBytes_Check(bytes)) info.digest = fnv(kFnvBasis, PyBytes_AS_STRING(bytes), PyBytes_GET_SIZE(bytes));
  Py_XDECREF(bytes);
  if (g_sw.editable.has(name)) info.kind = Kind::kEditable;
  if (info.kind == Kind::kOther && library_file(name)) info.kind = Kind::kLibrary;
  if (info.kind == Kind::kOther && g_sw.task_files.has(name)) info.kind = Kind::kTask;
  if (info.kind == Kind::kTask) {
    PyObject* fname = PyObject_GetAttrString(obj, "co_name");
    PyObject* line = PyObject_GetAttrString(obj, "co_firstlineno");
    const char* n = fname ? PyUnicode_AsUTF8(fname) : nullptr;
    info.where = name + ":" + std::to_string(line ? PyLong_AsLong(line) : -1) + ":" + (n ? n : "?");
    Py_XDECREF(fname);
    Py_XDECREF(line);
  }
  PyErr_Clear();
  return info;
}

// What ``code`` is: from the table, or read now (and added; into ``scratch`` when full).
struct CodeView {
  Kind kind;
  uint64_t digest;
  std::string_view where;
};
CodeView code_info(PyCodeObject* code, CodeInfo& scratch) {
  if (const CodeSlot* s = find_code(code))
    return CodeView{s->kind, s->digest, std::string_view(code_where() + s->where_at, s->where_n)};
  scratch = read_code(code);
  if (add_code(code, scratch)) return code_info(code, scratch);
  return CodeView{scratch.kind, scratch.digest, scratch.where};
}

// ---- the sentry: candidate code running outside the candidate's calls -------------------
//
// The reference's ``make_inputs`` and the baseline run in this process, as Python that
// looks library names up as it goes, and the interpreter runs Python of anyone's at many
// points no name lookup shows: signal handlers, garbage-collector callbacks, finalizers,
// profile and trace functions, Python kernels registered for an operator, a function's
// code object swapped under it, a stand-in bound for one call and unbound after. Candidate
// code run there computes the answer while the inputs are drawn, or slows the baseline,
// and every check made in Python afterwards can be undone before it looks. Whatever the
// way in, that code runs in frames of its own. So while the plan is under way and no
// candidate call is, the core evaluates every Python frame itself (PEP 523's frame
// evaluator, put in by the core when a watched stretch begins and taken out when it ends),
// and a frame whose code comes from the candidate's files is noted in the vault, where
// the note goes to the evaluator whatever the candidate does next. A candidate call runs
// with the interpreter's own evaluator, at full speed; so do the baseline's timed calls,
// but in a keyed quarter of the rounds, which nothing before the call tells apart, the
// baseline's call is watched and the round's samples let go (the watched frames cost
// time): a hook that runs in the baseline's calls is seen in its first few rounds.
//
// Code is the candidate's by its file (the plan's editable files). Code the candidate
// renames or compiles itself is ``dynamic_code`` (``sentry_audit``); code a library
// compiles or renames for it, a library's code object run with its globals, and native
// code pass for the library's, and what they do is judged by other means (operators in the
// baseline's calls, quiet draws). The frame's code object is read from the interpreter's own frame record,
// whose layout is CPython's per minor version (3.11 to 3.13 here).
#if PY_VERSION_HEX >= 0x030B0000 && PY_VERSION_HEX < 0x030E0000
constexpr bool kSentry = true;
PyCodeObject* frame_code(struct _PyInterpreterFrame* f) {
#if PY_VERSION_HEX >= 0x030C0000
  PyObject* code = reinterpret_cast<PyObject**>(f)[0];  // f_code (3.12), f_executable (3.13)
#else
  PyObject* code = reinterpret_cast<PyObject**>(f)[4];  // after f_func, globals, builtins, locals
#endif
  return code && PyCode_Check(code) ? reinterpret_cast<PyCodeObject*>(code) : nullptr;
}

const char* watch_name(int watch) {
  switch (watch) {
    case kWatchInputs: return "while the reference drew inputs";
    case kWatchBaseline: return "in a baseline call";
    default: return "between calls";
  }
}

std::string code_where(PyCodeObject* code) {
  PyObject* obj = reinterpret_cast<PyObject*>(code);
  PyObject* file = PyObject_GetAttrString(obj, "co_filename");
  PyObject* name = PyObject_GetAttrString(obj, "co_name");
  const char* f = file ? PyUnicode_AsUTF8(file) : nullptr;
  const char* n = name ? PyUnicode_AsUTF8(name) : nullptr;
  std::string where = f ? f : "?";
  size_t slash = where.rfind('/');
  if (slash != std::string::npos) where = where.substr(slash + 1);
  int line = code->co_firstlineno;
  std::string out = where + ":" + std::to_string(line) + ":" + (n ? n : "?");
  Py_XDECREF(file);
  Py_XDECREF(name);
  PyErr_Clear();
  return out;
}

// Whether ``code`` comes from the candidate's files (the recorder's code table decides).
bool candidates(PyCodeObject* code) {
  CodeInfo scratch;
  return code_info(code, scratch).kind == Kind::kEditable;
}

void note_outside(PyCodeObject* code, int watch, const char* how = "") {
  if (g_sw.vault) g_sw.vault->note_outside(code_where(code) + " ran " + watch_name(watch) + how);
}

void note_made(PyCodeObject* code, const std::string& what) {
  if (g_sw.vault) g_sw.vault->note_made(code_where(code) + " " + what);
}

PyObject* sentry_eval(PyThreadState* ts, struct _PyInterpreterFrame* f, int exc) {
  int watch = g_sw.watch;
  if (watch != kWatchOff) {
    if (PyCodeObject* code = frame_code(f)) {
      PyObject *type, *value, *trace;  // an exception thrown into a generator stays pending
      PyErr_Fetch(&type, &value, &trace);
      if (candidates(code)) note_outside(code, watch);
      PyErr_Restore(type, value, trace);
    }
  }
  auto prev = reinterpret_cast<_PyFrameEvalFunction>(g_sw.prev_eval);
  return prev ? prev(ts, f, exc) : _PyEval_EvalFrameDefault(ts, f, exc);
}

// A thread of the candidate's that was running before a watched stretch began (a loop
// started at import) evaluates no new frame while it runs there: it is seen by the
// candidate's frame on its stack, looked for whenever a watched stretch begins or ends.
//
// A thread need not run a frame of the candidate's to read what is drawn: one whose target
// is a chain of C callables finds the drawing frame through ``sys._current_frames`` and reads
// its tensors with numpy while torch's operators in the draw let the lock go. So every
// thread started after the core was created (by the candidate's import or calls) and alive
// while a watched stretch begins or ends is noted too; the evaluator judges it by the task
// (libraries a task lets candidates use, torch's compiler among them, start threads of
// their own).
std::vector<unsigned long> g_threads_at_start;

void note_threads_at_start() {
  PyThreadState* me = PyThreadState_Get();
  for (PyThreadState* t = PyInterpreterState_ThreadHead(PyThreadState_GetInterpreter(me)); t;
       t = PyThreadState_Next(t))
    g_threads_at_start.push_back(t->thread_id);
}

void note_thread(PyThreadState* t, int watch) {
  if (!g_sw.vault) return;
  std::string top = "no Python frame";
  if (PyFrameObject* f = PyThreadState_GetFrame(t)) {
    PyCodeObject* code = PyFrame_GetCode(f);
    top = code_where(code);
    Py_DECREF(code);
    Py_DECREF(f);
  }
  g_sw.vault->note_thread("a thread started after the evaluation's core (in " + top + ") was alive " +
                          watch_name(watch));
}

void scan_threads(int watch) {
  PyThreadState* me = PyThreadState_Get();
  for (PyThreadState* t = PyInterpreterState_ThreadHead(PyThreadState_GetInterpreter(me)); t;
       t = PyThreadState_Next(t)) {
    if (t == me) continue;
    if (std::find(g_threads_at_start.begin(), g_threads_at_start.end(), t->thread_id) ==
        g_threads_at_start.end())
      note_thread(t, watch);
    PyFrameObject* f = PyThreadState_GetFrame(t);
    while (f) {
      PyCodeObject* code = PyFrame_GetCode(f);
      bool mine = candidates(code);
      if (mine) note_outside(code, watch, " (on a thread of its own)");
      Py_DECREF(code);
      PyFrameObject* back = mine ? nullptr : PyFrame_GetBack(f);
      Py_DECREF(f);
      f = back;
    }
  }
}

// Code objects the candidate's code makes itself, named after a file not its own: its
// frames would pass for that file's. Seen by an audit hook of the core's, added before
// candidate code is imported (Python offers no way to remove one): a new code object
// (``CodeType``, ``code.replace``) under a name not among the candidate's files, or source
// compiled (``compile``, ``exec``, ``eval`` of a string), called straight from the
// candidate's code. Libraries that make code for it (Triton's launcher, torch's dynamo)
// call these from frames of their own.
int sentry_audit(const char* event, PyObject* args, void*) {
  bool fresh_code = std::strcmp(event, "code.__new__") == 0;
  if (!fresh_code && std::strcmp(event, "compile") != 0) return 0;
  PyObject *type, *value, *trace;
  PyErr_Fetch(&type, &value, &trace);
  PyFrameObject* f = PyEval_GetFrame();  // borrowed
  if (f && g_sw.editable.n) {
    PyCodeObject* code = PyFrame_GetCode(f);
    if (candidates(code)) {
      PyObject* name = PyTuple_Check(args) && PyTuple_GET_SIZE(args) > 1 ? PyTuple_GET_ITEM(args, 1) : nullptr;
      const char* file = name && PyUnicode_Check(name) ? PyUnicode_AsUTF8(name) : nullptr;
      std::string named = file ? file : "?";
      if (!fresh_code || !g_sw.editable.has(named)) {
        size_t slash = named.rfind('/');
        if (slash != std::string::npos) named = named.substr(slash + 1);
        note_made(code, std::string(fresh_code ? "made a code object named " : "compiled source named ") + named);
      }
    }
    Py_DECREF(code);
  }
  PyErr_Clear();
  PyErr_Restore(type, value, trace);
  return 0;
}

// Under the GIL, with the switch's page writable. The evaluator found in place when a
// watched stretch begins (torch's dynamo may have put one in) is wrapped, and put back
// when it ends; the interpreter's own is put back as none at all, so that Python calls
// are inlined again.
void watch_frames(int watch) {
  PyInterpreterState* interp = PyInterpreterState_Get();
  _PyFrameEvalFunction now = _PyInterpreterState_GetEvalFrameFunc(interp);
  if (watch != kWatchOff && now != &sentry_eval) {
    g_sw.prev_eval = now == &_PyEval_EvalFrameDefault ? nullptr : reinterpret_cast<void*>(now);
    _PyInterpreterState_SetEvalFrameFunc(interp, &sentry_eval);
  } else if (watch == kWatchOff && now == &sentry_eval) {
    _PyInterpreterState_SetEvalFrameFunc(interp, reinterpret_cast<_PyFrameEvalFunction>(g_sw.prev_eval));
  }
  if (watch != kWatchOff || g_sw.watch != kWatchOff) scan_threads(watch != kWatchOff ? watch : g_sw.watch);
  g_sw.watch = watch;
}

void add_sentry_audit() {
  PySys_AddAuditHook(&sentry_audit, nullptr);
  note_threads_at_start();
}
#else
constexpr bool kSentry = false;
void watch_frames(int watch) { g_sw.watch = watch; }
void add_sentry_audit() {}
#endif

// Who called a forbidden operator inside a candidate call. Walking out from the innermost
// frame past library code, the first other frame decides: only the task's own files (model
// code around the kernel, not editable) are not the candidate's. Every other ending is the
// candidate's: its file, a file its code objects claim (a code object's file name is the
// candidate's to choose), or the evaluator's frames, reached when no Python of the
// candidate's is on the stack at all (an entry that is a library callable).
//
// Task code can still be made to run on the candidate's behalf: the candidate calls one of
// its helpers, hands one over as its own kernel (``rms_norm = model.torch_rms_norm``), or
// labels its own code with a task file's name. So a call that task code made is kept as a
// site, ``op@file:line:function:instruction:path``, never dropped, and stays the
// candidate's unless the task's baseline, run where no candidate code is, makes the same
// call (the parent compares, :mod:`aka.eval._sites`). The path is a digest of every frame
// from the innermost out to the outermost one of a task file, each by its bytecode and
// instruction: a call reached through code of the candidate's in between, whatever file that
// code claims to be, or from another place in the task's code (a helper of the model's
// handed over as the kernel) is another path. With the candidate's own file anywhere on the
// stack the call is the candidate's outright.
std::string attribution(std::string_view op) {
  PyGILState_STATE st = PyGILState_Ensure();
  std::string site;  // empty: the candidate's
  bool decided = false, editable = false;
  uint64_t path = kFnvBasis, through_task = kFnvBasis;
  CodeInfo scratch;
  PyFrameObject* f = PyEval_GetFrame();
  Py_XINCREF(f);
  while (f && !editable) {
    PyCodeObject* code = PyFrame_GetCode(f);
    const CodeView info = code_info(code, scratch);
    int lasti = PyFrame_GetLasti(f);
    editable = info.kind == Kind::kEditable;
    path = fnv(fnv(path, &info.digest, sizeof info.digest), &lasti, sizeof lasti);
    if (info.kind == Kind::kTask) through_task = path;
    if (!decided && info.kind != Kind::kLibrary) {
      decided = true;
      if (info.kind == Kind::kTask) site = std::string(op) + "@" + std::string(info.where) + ":" + std::to_string(lasti);
    }
    Py_DECREF(code);
    PyFrameObject* back = PyFrame_GetBack(f);
    Py_DECREF(f);
    f = back;
  }
  Py_XDECREF(f);
  PyErr_Clear();
  PyGILState_Release(st);
  if (editable || site.empty()) return std::string();
  return site + ":" + hex(reinterpret_cast<uint8_t*>(&through_task), 8);
}

// Records ``name`` when the task forbids it: plainly when the candidate called it, as a
// site when task code did (from a RecordFunction callback, or the core's redispatch
// wrapper). In a baseline call (``mode`` 3) the same is done and let go.
void charge(std::string_view name, int mode) {
  if (g_sw.allowed.n) {
    if (g_sw.allowed.has(name)) return;
  } else if (!g_sw.forbidden.has(name)) {
    return;
  }
  std::string site = attribution(name);
  if (g_sw.vault) g_sw.vault->charge(mode == 1 ? 0 : 1, site.empty() ? name : std::string_view(site));
}

// A forbidden operator counts wherever it runs, inside other operators too: an operator
// the task allows may be a composite that dispatches to one it forbids
// (``torch.linalg.matmul`` runs ``aten::matmul`` then ``aten::mm``), and counting only
// the outermost one let such a wrapper launder the library call. Plumbing (copies,
// views, allocation) is never forbidden (``aka.eval._ops.PLUMBING``), so what a copy or a
// view dispatches to inside is not charged either way. During a candidate call every
// thread counts, not only the calling one: a thread of the candidate's (a Python one, or
// native with no Python frame at all) is the candidate's. The core's own probe counts
// outermost operators on the calling thread only.
std::unique_ptr<at::ObserverContext> on_op(const at::RecordFunction& fn) {
  int mode = g_sw.mode.load(std::memory_order_relaxed);
  if (mode == 2) {
    if (t_depth == 0 && std::this_thread::get_id() == g_sw.call_thread) g_alive = true;
  } else if (mode) {
    charge(fn.name(), mode);
  }
  t_depth++;
  return nullptr;
}
void on_op_exit(const at::RecordFunction&, at::ObserverContext*) { t_depth--; }

at::CallbackHandle add_recorder() {
  return at::addGlobalCallback(
      at::RecordFunctionCallback(&on_op, &on_op_exit).needsInputs(false).scopes({at::RecordScope::FUNCTION}));
}

// Our own tensor work must not pass through Python-level dispatch that candidate code may
// have installed (a dispatch mode, a Python dispatcher override).
struct NoPython {
  c10::impl::ExcludeDispatchKeyGuard guard{c10::DispatchKeySet(
      {c10::DispatchKey::Python, c10::DispatchKey::PythonTLSSnapshot,
       c10::DispatchKey::PythonDispatcher, c10::DispatchKey::PreDispatch})};
};

// The task's ``make_inputs`` is Python, run by the core outside any candidate call (no
// operator recorded, no clock running): a torch-function or dispatch mode the candidate
// entered at import and never left saw every call it made, and could compute the answer
// there from the inputs it was drawing (the forbidden library op included) for its kernel
// to copy later. The modes the candidate left are set aside while it runs, and put back
// after; modes ``make_inputs`` enters itself (a device placement) work as ever.
struct NoUserModes {
  at::impl::PythonTorchFunctionTLS functions = at::impl::PythonTorchFunctionTLS::get_state();
  c10::impl::TorchDispatchModeTLS dispatch = c10::impl::TorchDispatchModeTLS::get_state();
  NoUserModes() {
    at::impl::PythonTorchFunctionTLS::set_state(at::impl::PythonTorchFunctionTLS());
    c10::impl::TorchDispatchModeTLS::set_state(c10::impl::TorchDispatchModeTLS());
  }
  ~NoUserModes() {
    at::impl::PythonTorchFunctionTLS::set_state(functions);
    c10::impl::TorchDispatchModeTLS::set_state(std::move(dispatch));
  }
  NoUserModes(const NoUserModes&) = delete;
  NoUserModes& operator=(const NoUserModes&) = delete;
};

// What else runs Python while the reference draws inputs, at points no frame of the
// candidate's need show: the collector's callbacks (at any allocation), signal handlers
// (between any two bytecodes), the drawing thread's profile and trace functions. Each
// can be a library's code or a chain of C callables that the candidate put together, and
// read the inputs as they are drawn (numpy over their memory runs no operator) to answer
// them before its call. So the collector's callbacks are set aside for the draw (the
// collector itself runs as ever: turned off, the collection it owes would come due in the
// candidate's timed call right after, and slow it against the baseline, which draws
// nothing), handlers the candidate set too (signals that come meanwhile are let go), and
// the thread's profile and trace functions, each put back after. ``signals``: the signal
// module's ``getsignal``, ``signal``, ``SIG_IGN``, the numbers, and the collector's own list
// of callbacks, held from before candidate code was imported (a new ``gc.callbacks`` is
// not the list the collector calls).
struct QuietDraw {
  struct Signals {
    py::object getsignal, setsignal, ignore, keep_dfl, keep_int;
    std::vector<int> numbers;
    py::list gc_callbacks;
    // ``sys.monitoring`` (3.12 on): its tools' callbacks fire on events of any code, the
    // reference's included, global or set on one code object alone; a tool with no
    // callback for an event is skipped there, so setting the callbacks aside is enough
    py::object get_tool, register_callback;
    std::vector<int> events;  // every single event
  };
  const Signals& sig;
  py::list callbacks;  // the collector's, set aside
  std::vector<std::pair<int, py::object>> set_aside;
  std::vector<std::tuple<int, int, py::object>> monitors;  // (tool, event, callback)
  Py_tracefunc profile = nullptr, trace = nullptr;
  PyObject *profile_obj = nullptr, *trace_obj = nullptr;
  explicit QuietDraw(const Signals& signals) : sig(signals) {
    if (PyList_GET_SIZE(sig.gc_callbacks.ptr()) > 0) {
      // a copy (a list converted to py::list is the same list), then the collector's emptied
      callbacks = py::reinterpret_steal<py::list>(
          PyList_GetSlice(sig.gc_callbacks.ptr(), 0, PY_SSIZE_T_MAX));
      PyList_SetSlice(sig.gc_callbacks.ptr(), 0, PY_SSIZE_T_MAX, nullptr);
    }
    for (int n : sig.numbers) {
      py::object h = sig.getsignal(n);
      if (h.is_none() || h.is(sig.ignore) || h.is(sig.keep_dfl) || h.is(sig.keep_int) || PyLong_Check(h.ptr()))
        continue;
      sig.setsignal(n, sig.ignore);
      set_aside.emplace_back(n, h);
    }
    if (sig.get_tool) {
      for (int tool = 0; tool < 6; ++tool) {
        if (sig.get_tool(tool).is_none()) continue;
        for (int event : sig.events) {
          try {
            py::object cb = sig.register_callback(tool, event, py::none());
            if (!cb.is_none()) monitors.emplace_back(tool, event, cb);
          } catch (py::error_already_set&) {  // an event this version takes no callback for
          }
        }
      }
    }
    PyThreadState* ts = PyThreadState_Get();
    profile = ts->c_profilefunc;
    trace = ts->c_tracefunc;
    profile_obj = ts->c_profileobj;
    trace_obj = ts->c_traceobj;
    Py_XINCREF(profile_obj);
    Py_XINCREF(trace_obj);
    if (profile) PyEval_SetProfile(nullptr, nullptr);
    if (trace) PyEval_SetTrace(nullptr, nullptr);
  }
  ~QuietDraw() {
    if (trace) PyEval_SetTrace(trace, trace_obj);
    if (profile) PyEval_SetProfile(profile, profile_obj);
    Py_XDECREF(profile_obj);
    Py_XDECREF(trace_obj);
    for (auto& [n, h] : set_aside) {
      try {
        sig.setsignal(n, h);
      } catch (py::error_already_set&) {
      }
    }
    for (auto& [tool, event, cb] : monitors) {
      try {
        sig.register_callback(tool, event, cb);
      } catch (py::error_already_set&) {
      }
    }
    if (PyList_GET_SIZE(callbacks.ptr()) > 0)
      PyList_SetSlice(sig.gc_callbacks.ptr(), 0, 0, callbacks.ptr());  // put back in front
  }
  QuietDraw(const QuietDraw&) = delete;
  QuietDraw& operator=(const QuietDraw&) = delete;
};


double now_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// ---- native code loaded after the core ----------------------------------------------
//
// Executable file mappings are how native code enters a process (``dlopen``, ``ctypes``,
// a torch extension, inductor's C++ kernels); candidate Python cannot compute without
// ATen operators or Triton except through one. The core lists the files mapped executable
// when it is created (before candidate code is imported) and, after the import, the checked
// calls and each timed shape, those mapped since, each with whether it changed after the core
// started (built during this evaluation; a deleted file or a ``memfd`` counts as such).
// The parent decides what a task allows (``aka.eval._foreign.flags``).

std::set<std::string> exec_files() {
  std::set<std::string> out;
  std::ifstream maps("/proc/self/maps");
  std::string line;
  while (std::getline(maps, line)) {
    // address perms offset dev inode path
    size_t sp = line.find(' ');
    if (sp == std::string::npos || sp + 3 >= line.size() || line[sp + 3] != 'x') continue;
    size_t path = line.find('/', sp);
    if (path == std::string::npos) continue;  // anonymous memory, [vdso], [stack]
    out.insert(line.substr(path));
  }
  return out;
}

// ---- the drawer and the baseline's timer: where no candidate code runs -----------------
//
// A call's inputs come from the task's ``make_inputs``, which is Python: run in this process,
// every library function, object and piece of data it reaches is the candidate's to rebind,
// and round after round of the red team computed the answer there, outside every timed window
// (docs/security.md). Where a drawer runs (CPU evaluations), the draws happen in a process
// forked from this one once the core was made and before the candidate's code existed: no
// candidate code ever runs there, its memory is out of this process's reach (not dumpable:
// no ``/proc/PID/mem``; no ``ptrace``, no signals to it once ``confine_others`` holds), and
// what it sends back is bytes the core reads straight into tensors, holding the
// interpreter's lock from request to tensors, so no Python runs here in between.
//
// The baseline's timer is a second such process (``Seal::serve_baseline``), with a drawer of
// its own: it times each baseline call exactly as the core times the candidate's, so the
// candidate's process never holds the baseline's inputs, its call or its clock, and nothing
// done there (rebinding what the baseline calls, hooks run in its calls, its memory) can
// slow it.
//
// The pipes themselves are the candidate's to reach: its process holds their ends, and a
// process it starts can open them again through ``/proc`` and read what passes, or write.
// A red-team round did so: a helper read each answer before the core, computed the output
// from the inputs in it outside every window, and put the bytes back. So every message is
// sealed with keys only these processes hold (each was forked from the core after it read
// its key, and derives them in its vault): per message and direction, a ChaCha20 key
// (RFC 8439's block function) for its body and a one-time polynomial MAC over the body's
// ciphertext (mod 2^61-1, as the output digests; a forgery passes with probability about
// words / 2^61). A tap reads ciphertext; a forged, altered, replayed or misdirected message
// fails its MAC, which ends the evaluation as an error; holding one back only delays what
// happens outside the windows.
//
// Wire: a message = nonce u64, body length u64, ciphertext, tag u64. A request's body =
// kind u32 (kDraw, kPing, kTime, kStop), seed i64, then for kDraw a text ("dtype\ndevice\n
// name=value\n..."), for kTime the pair u32, the round i64, the poison pattern i32, new
// values u8. An answer echoes the request's nonce; its body = status u32 (nonzero: a u32
// length and the error's text follow), then for a draw a count u32 and per argument a kind
// u8: 0 a tensor (scalar type i32, requires_grad u8, ndim u32, sizes i64[ndim], strides
// i64[ndim], bytes u64, the bytes in memory order), 1 another value (bytes u64, its
// pickle); for a ping a count of 0; for kTime the window and host seconds (f64 each).

namespace drawer {

constexpr uint32_t kDraw = 0, kPing = 1, kTime = 2, kStop = 3;
constexpr uint64_t kMaxBody = uint64_t(1) << 32;

// The key of one message: 32 bytes for (channel, direction, nonce, use), derived from the
// core's key in the vault of whichever process holds it.
using KeyFn = std::function<void(const std::string& label, uint8_t out[32])>;

// How the timer times one call of the baseline: (pair, round, seed, pattern, new values)
// to (window seconds, host seconds).
using TimeFn = std::function<std::pair<double, double>(uint32_t, int64_t, int64_t, int32_t, bool)>;

bool read_all(int fd, void* p, size_t n) {
  char* c = static_cast<char*>(p);
  while (n) {
    ssize_t r = ::read(fd, c, n);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return false;
    c += r;
    n -= size_t(r);
  }
  return true;
}

bool write_all(int fd, const void* p, size_t n) {
  const char* c = static_cast<const char*>(p);
  while (n) {
    ssize_t w = ::write(fd, c, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return false;
    c += w;
    n -= size_t(w);
  }
  return true;
}

template <typename T>
void put(std::string& s, T v) {
  s.append(reinterpret_cast<const char*>(&v), sizeof v);
}

// A message body read back: each ``get`` past its end is an error, not a read of memory.
struct Reader {
  const std::string& s;
  size_t at = 0;
  template <typename T>
  T get() {
    T v{};
    take(&v, sizeof v);
    return v;
  }
  void take(void* p, size_t n) {
    if (n > s.size() - at) throw std::runtime_error("the input drawer's answer ended early");
    std::memcpy(p, s.data() + at, n);
    at += n;
  }
};

uint32_t rotl(uint32_t v, int n) { return (v << n) | (v >> (32 - n)); }

// RFC 8439's ChaCha20 block function, 20 rounds, over ``in`` into ``out``.
void chacha_block(const uint32_t in[16], uint32_t out[16]) {
  uint32_t x[16];
  std::memcpy(x, in, sizeof x);
  auto qr = [&x](int a, int b, int c, int d) {
    x[a] += x[b]; x[d] = rotl(x[d] ^ x[a], 16);
    x[c] += x[d]; x[b] = rotl(x[b] ^ x[c], 12);
    x[a] += x[b]; x[d] = rotl(x[d] ^ x[a], 8);
    x[c] += x[d]; x[b] = rotl(x[b] ^ x[c], 7);
  };
  for (int i = 0; i < 10; i++) {
    qr(0, 4, 8, 12); qr(1, 5, 9, 13); qr(2, 6, 10, 14); qr(3, 7, 11, 15);
    qr(0, 5, 10, 15); qr(1, 6, 11, 12); qr(2, 7, 8, 13); qr(3, 4, 9, 14);
  }
  for (int i = 0; i < 16; i++) out[i] = x[i] + in[i];
}

// ``data`` XORed with ChaCha20's key stream for ``key`` (a key of this message alone, so
// the counter starts at 0 and the nonce is zero). Little-endian hosts (x86-64, arm64).
void chacha20_xor(const uint8_t key[32], uint32_t counter, const uint8_t nonce[12], char* data,
                  size_t n) {
  uint32_t st[16] = {0x61707865, 0x3320646e, 0x79622d32, 0x6b206574};
  std::memcpy(st + 4, key, 32);
  st[12] = counter;
  std::memcpy(st + 13, nonce, 12);
  uint32_t ks[16];
  for (size_t off = 0; off < n; off += 64) {
    chacha_block(st, ks);
    const uint8_t* k = reinterpret_cast<const uint8_t*>(ks);
    size_t m = std::min<size_t>(64, n - off);
    for (size_t i = 0; i < m; i++) data[off + i] = char(uint8_t(data[off + i]) ^ k[i]);
    st[12]++;
  }
  wipe(st, sizeof st);
  wipe(ks, sizeof ks);
}

// The sealing of one direction of one channel: ``channel`` names it ("d": the core's
// drawer, "t": the baseline's timer, "b": the timer's drawer), ``dir`` the direction ('q'
// requests, 'a' answers).
struct Sealing {
  KeyFn keys;
  std::string channel;

  void derive(char dir, uint64_t nonce, uint8_t stream[32], uint64_t& r, uint64_t& s) const {
    std::string base = "pipe:" + channel + ":" + dir + ":" + std::to_string(nonce);
    keys(base + ":stream", stream);
    uint8_t m[32];
    keys(base + ":mac", m);
    std::memcpy(&r, m, 8);
    std::memcpy(&s, m + 8, 8);
    r = r % (kP - 3) + 2;
    s = s % kP;
    wipe(m, sizeof m);
  }

  uint64_t tag(uint64_t r, uint64_t s, uint64_t nonce, const std::string& ct) const {
    uint64_t h = poly_hash(reinterpret_cast<const uint8_t*>(ct.data()), ct.size(), r);
    h = addmod(mulmod(h, r), nonce % kP);  // the header too: a body moved to another nonce fails
    return addmod(mulmod(h, r), s);
  }

  std::string seal(char dir, uint64_t nonce, std::string body) const {
    uint8_t stream[32];
    uint64_t r, s;
    derive(dir, nonce, stream, r, s);
    static const uint8_t zero[12] = {0};
    chacha20_xor(stream, 0, zero, body.data(), body.size());
    wipe(stream, sizeof stream);
    std::string msg;
    put<uint64_t>(msg, nonce);
    put<uint64_t>(msg, body.size());
    msg += body;
    put<uint64_t>(msg, tag(r, s, nonce, body));
    return msg;
  }

  // The next message on ``fd``, opened: (nonce, body). Throws if the pipe ends or the
  // message fails its MAC.
  std::pair<uint64_t, std::string> open(char dir, int fd) const {
    uint64_t nonce = 0, n = 0, got = 0;
    if (!read_all(fd, &nonce, sizeof nonce) || !read_all(fd, &n, sizeof n))
      throw std::runtime_error("the input drawer stopped answering");
    if (n > kMaxBody) throw std::runtime_error("a message on the input drawer's pipe was not sealed by it");
    std::string body(n, '\0');
    if ((n && !read_all(fd, body.data(), n)) || !read_all(fd, &got, sizeof got))
      throw std::runtime_error("the input drawer stopped answering");
    uint8_t stream[32];
    uint64_t r, s;
    derive(dir, nonce, stream, r, s);
    if (tag(r, s, nonce, body) != got) {
      wipe(stream, sizeof stream);
      throw std::runtime_error("a message on the input drawer's pipe was not sealed by it");
    }
    static const uint8_t zero[12] = {0};
    chacha20_xor(stream, 0, zero, body.data(), body.size());
    wipe(stream, sizeof stream);
    return {nonce, std::move(body)};
  }
};

// A tensor as the wire carries it: dense tensors keep their strides (a transposed input
// stays transposed), others arrive contiguous, as a clone would make them.
void put_tensor(std::string& s, at::Tensor t) {
  if (t.layout() != c10::kStrided)
    throw std::runtime_error("make_inputs returned a tensor of layout " +
                             c10::str(t.layout()) + ", which the drawer cannot send");
  t = t.resolve_conj().resolve_neg();
  if (!t.device().is_cpu()) t = t.cpu();
  if (!t.is_non_overlapping_and_dense()) t = t.contiguous();
  put<int32_t>(s, int32_t(t.scalar_type()));
  put<uint8_t>(s, t.requires_grad() ? 1 : 0);
  put<uint32_t>(s, uint32_t(t.dim()));
  for (int64_t v : t.sizes()) put<int64_t>(s, v);
  for (int64_t v : t.strides()) put<int64_t>(s, v);
  uint64_t n = uint64_t(t.numel()) * uint64_t(t.element_size());
  put<uint64_t>(s, n);
  if (n) s.append(static_cast<const char*>(t.data_ptr()), n);
}

// An error answer's body: status 1, the text (cut to 4000 bytes).
std::string failed(std::string why) {
  if (why.size() > 4000) why.resize(4000);
  std::string out;
  put<uint32_t>(out, 1);
  put<uint32_t>(out, uint32_t(why.size()));
  return out + why;
}

// A draw's answer body: ``make_inputs``'s arguments for the request's text and seed
// (``torch`` and ``dumps``: the module and ``pickle.dumps``, looked up once per loop).
std::string draw(py::object make_inputs, const std::string& text, int64_t seed,
                 const py::module_& torch, const py::object& dumps) {
  std::vector<std::string> lines;
  size_t at = 0;
  while (at < text.size()) {
    size_t end = text.find('\n', at);
    if (end == std::string::npos) end = text.size();
    lines.push_back(text.substr(at, end - at));
    at = end + 1;
  }
  if (lines.size() < 2) throw std::runtime_error("a request without dtype and device");
  py::dict shape = shape_fields(lines, 2);
  if (make_inputs.is_none()) throw std::runtime_error("this process draws nothing");
  py::tuple args(make_inputs(shape, torch.attr(lines[0].c_str()), lines[1], seed));
  std::string body;
  put<uint32_t>(body, 0);
  put<uint32_t>(body, uint32_t(args.size()));
  for (py::handle a : args) {
    if (THPVariable_Check(a.ptr())) {
      put<uint8_t>(body, 0);
      put_tensor(body, THPVariable_Unpack(a.ptr()));
    } else {
      std::string p = py::bytes(dumps(a));
      put<uint8_t>(body, 1);
      put<uint64_t>(body, p.size());
      body += p;
    }
  }
  return body;
}

// The loop of a drawer (``make_inputs`` given) or of the baseline's timer (``time_baseline``
// given), in a forked process: one sealed answer per sealed request until the stop request.
// A request that fails its MAC ends the loop: whoever wrote it is not the core, and the
// core, waiting for an answer that never comes, fails the evaluation.
void serve(py::object make_inputs, int rfd, int wfd, const Sealing& seal, const TimeFn& time_baseline) {
  py::module_ torch = py::module_::import("torch");
  py::object dumps = py::module_::import("pickle").attr("dumps");
  while (true) {
    uint64_t nonce;
    std::string req;
    try {
      std::tie(nonce, req) = seal.open('q', rfd);
    } catch (std::exception&) {
      return;
    }
    Reader in{req};
    std::string out;
    try {
      uint32_t kind = in.get<uint32_t>();
      int64_t seed = in.get<int64_t>();
      if (kind == kStop) return;
      if (kind == kPing) {
        put<uint32_t>(out, 0);
        put<uint32_t>(out, 0);
      } else if (kind == kTime) {
        uint32_t pair = in.get<uint32_t>();
        int64_t round = in.get<int64_t>();
        int32_t pattern = in.get<int32_t>();
        bool fresh = in.get<uint8_t>() != 0;
        if (!time_baseline) throw std::runtime_error("this process times nothing");
        auto [window, host] = time_baseline(pair, round, seed, pattern, fresh);
        put<uint32_t>(out, 0);
        put<double>(out, window);
        put<double>(out, host);
      } else if (kind == kDraw) {
        out = draw(make_inputs, req.substr(in.at), seed, torch, dumps);
      } else {
        throw std::runtime_error("an unknown request");
      }
    } catch (py::error_already_set& e) {
      out = failed(e.what());
    } catch (std::exception& e) {  // make_inputs raised (or sent what the wire cannot carry)
      out = failed(e.what());
    }
    std::string msg = seal.seal('a', nonce, std::move(out));
    if (!write_all(wfd, msg.data(), msg.size())) return;
  }
}

// Waits busily until ``fd`` has something to read (two seconds at most, then the ``read``
// that follows waits): a process that sleeps until its pipe has data wakes on a cold
// processor, and a call timed right after ran twice as slow as one that did not wait (an
// A/A of 0.46-0.59 on the CPU). Each empty poll yields the processor, so on a machine
// with fewer free cores than busy processes the drawer (or another evaluation) runs in
// this process's place rather than after its time slice, and the wait never turns into a
// sleep: a draw slower than the old 50 ms bound (a loaded machine) was followed by a
// call timed from a cold start.
void spin_until_readable(int fd) {
  struct pollfd pfd = {fd, POLLIN, 0};
  auto t0 = std::chrono::steady_clock::now();
  while (::poll(&pfd, 1, 0) == 0) {
    if (std::chrono::steady_clock::now() - t0 > std::chrono::seconds(2)) return;
    ::sched_yield();
  }
}

// A forked drawer or timer, before its loop: not dumpable (its memory cannot be opened or
// read by another process of this user), killed with the process that forked it, holding
// no descriptor but ``keep`` (its pipes) and the standard error (a fault's report), on one
// thread of torch's, as evaluation processes run (``OMP_NUM_THREADS=1``).
void seclude(const std::vector<int>& keep) {
  ::prctl(PR_SET_DUMPABLE, 0);
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  int devnull = ::open("/dev/null", O_RDWR | O_CLOEXEC);
  if (devnull >= 0) {
    ::dup2(devnull, 0);
    ::dup2(devnull, 1);
  }
  std::vector<int> open;
  if (DIR* d = ::opendir("/proc/self/fd")) {
    while (struct dirent* e = ::readdir(d))
      if (e->d_name[0] >= '0' && e->d_name[0] <= '9') open.push_back(std::atoi(e->d_name));
    ::closedir(d);  // its own descriptor is in the list, closed already by then
  }
  for (int fd : open)
    if (fd > 2 && std::find(keep.begin(), keep.end(), fd) == keep.end()) ::close(fd);
  at::set_num_threads(1);
}

// The core's end of one channel: sealed requests out, sealed answers in.
class Client {
 public:
  // ``spec``: None (nothing served) or (pid, request fd, answer fd); ``seal``: the
  // channel's sealing.
  void adopt(py::object spec, Sealing seal) {
    if (spec.is_none()) return;
    py::tuple t(spec);
    pid_ = t[0].cast<int>();
    req_ = t[1].cast<int>();
    ans_ = t[2].cast<int>();
    struct stat a{}, b{};
    if (::fstat(req_, &a) != 0 || ::fstat(ans_, &b) != 0)
      throw std::runtime_error("seal: the input drawer's pipes are not open");
    req_id_ = {a.st_dev, a.st_ino};
    ans_id_ = {b.st_dev, b.st_ino};
    seal_ = std::move(seal);
    loads_ = py::module_::import("pickle").attr("loads");
  }
  bool on() const { return pid_ > 0; }
  int pid() const { return pid_; }
  std::vector<int> fds() const { return {req_, ans_}; }

  // A round trip with nothing drawn, before a call whose inputs were not drawn now (a
  // kept or pooled set): every timed call then follows one round trip to its drawer, so
  // none is timed from a colder start than another.
  void ping(uint64_t nonce) {
    if (!on()) return;
    std::string ans = ask(nonce, head(kPing, 0), true);
    Reader in{ans};
    status(in, "the input drawer: ");
  }

  // One call of the baseline timed by its timer: (window seconds, host seconds). Waited
  // for in ``read``, as the timer waits for the next request while the candidate's call
  // is timed here.
  std::pair<double, double> time(uint64_t nonce, uint32_t pair, int64_t round, int64_t seed,
                                 int32_t pattern, bool fresh) {
    std::string body = head(kTime, seed);
    put<uint32_t>(body, pair);
    put<int64_t>(body, round);
    put<int32_t>(body, pattern);
    put<uint8_t>(body, fresh ? 1 : 0);
    std::string ans = ask(nonce, body, false);
    Reader in{ans};
    status(in, "the baseline (in its timer): ");
    double window = in.get<double>(), host = in.get<double>();
    if (!std::isfinite(window) || !std::isfinite(host) || window < 0 || host < 0)
      throw std::runtime_error("the baseline's timer sent no time");
    return {window, host};
  }

  py::tuple draw(uint64_t nonce, const py::dict& shape, const std::string& dtype,
                 const std::string& device, int64_t seed) {
    try {
      return fetch(nonce, shape, dtype, device, seed);
    } catch (py::error_already_set&) {
      throw;
    } catch (std::exception& e) {  // the same way a draw that raised in this process goes
      PyErr_SetString(PyExc_RuntimeError, e.what());
      throw py::error_already_set();
    }
  }

  // A stop request ends the loop (closing the pipe would not, where a process the
  // candidate forked holds a copy of it), and the process is reaped here, waiting two
  // seconds at most: signals to it are refused once ``confine_others`` holds, so it is
  // never killed from here, and one that does not leave dies with this process (its
  // parent-death signal).
  void stop() {
    if (!on()) return;
    std::string msg = seal_.seal('q', 0, head(kStop, 0));
    write_all(req_, msg.data(), msg.size());
    ::close(req_);
    ::close(ans_);
    for (int i = 0; i < 2000; i++) {
      int status;
      pid_t r = ::waitpid(pid_, &status, WNOHANG);
      if (r == pid_ || (r < 0 && errno != EINTR)) break;
      ::usleep(1000);
    }
    pid_ = -1;
  }

 private:
  static std::string head(uint32_t kind, int64_t seed) {
    std::string body;
    put<uint32_t>(body, kind);
    put<int64_t>(body, seed);
    return body;
  }

  bool same(int fd, const std::pair<dev_t, ino_t>& id) const {
    struct stat s{};
    return ::fstat(fd, &s) == 0 && s.st_dev == id.first && s.st_ino == id.second;
  }

  // Sends one sealed request and returns the answer's opened body. ``spin``: wait busily
  // first (a draw or ping before one of this process's timed calls).
  std::string ask(uint64_t nonce, const std::string& body, bool spin) {
    if (!on()) throw std::runtime_error("the input drawer has stopped");
    if (!same(req_, req_id_) || !same(ans_, ans_id_))
      throw std::runtime_error("the input drawer's pipes were replaced in this process");
    std::string msg = seal_.seal('q', nonce, body);
    if (!write_all(req_, msg.data(), msg.size()))
      throw std::runtime_error("the input drawer stopped answering");
    if (spin) spin_until_readable(ans_);
    auto [got, ans] = seal_.open('a', ans_);
    if (got != nonce) throw std::runtime_error("the input drawer's answer was not to this request");
    return std::move(ans);
  }

  static void status(Reader& in, const char* what) {
    if (in.get<uint32_t>() == 0) return;
    uint32_t n = in.get<uint32_t>();
    if (n > 4000) throw std::runtime_error("the input drawer's error was too long");
    std::string why(n, '\0');
    in.take(why.data(), n);
    throw std::runtime_error(what + why);
  }

  py::tuple fetch(uint64_t nonce, const py::dict& shape, const std::string& dtype,
                  const std::string& device, int64_t seed) {
    std::string text = dtype + "\n" + device;
    for (auto item : shape)
      text += "\n" + std::string(py::str(item.first)) + "=" + std::string(py::str(item.second));
    std::string ans = ask(nonce, head(kDraw, seed) + text, true);
    Reader in{ans};
    status(in, "make_inputs (in the input drawer): ");
    uint32_t count = in.get<uint32_t>();
    if (count > 4096) throw std::runtime_error("the input drawer sent too many arguments");
    py::tuple out(count);
    for (uint32_t i = 0; i < count; i++) {
      uint8_t kind = in.get<uint8_t>();
      if (kind == 0) {
        out[i] = py::reinterpret_steal<py::object>(THPVariable_Wrap(tensor(in)));
      } else if (kind == 1) {
        uint64_t n = in.get<uint64_t>();
        if (n > (64ull << 20)) throw std::runtime_error("the input drawer sent too large a value");
        std::string p(n, '\0');
        in.take(p.data(), n);
        out[i] = loads_(py::bytes(p));
      } else {
        throw std::runtime_error("the input drawer sent an argument of no known kind");
      }
    }
    return out;
  }

  static at::Tensor tensor(Reader& in) {
    auto type = c10::ScalarType(in.get<int32_t>());
    if (int(type) < 0 || int(type) >= int(c10::ScalarType::NumOptions))
      throw std::runtime_error("the input drawer sent an unknown dtype");
    bool grad = in.get<uint8_t>() != 0;
    uint32_t dim = in.get<uint32_t>();
    if (dim > 64) throw std::runtime_error("the input drawer sent too many dimensions");
    std::vector<int64_t> sizes(dim), strides(dim);
    for (auto& v : sizes) v = in.get<int64_t>();
    for (auto& v : strides) v = in.get<int64_t>();
    uint64_t n = in.get<uint64_t>();
    NoPython np;
    at::Tensor t = at::empty_strided(sizes, strides, at::TensorOptions().dtype(type));
    if (n != uint64_t(t.numel()) * uint64_t(t.element_size()) ||
        (n && !t.is_non_overlapping_and_dense()))
      throw std::runtime_error("the input drawer sent a tensor whose bytes do not fit it");
    if (n) in.take(t.data_ptr(), n);
    if (grad) t.requires_grad_(true);
    return t;
  }

  pid_t pid_ = -1;
  int req_ = -1, ans_ = -1;
  std::pair<dev_t, ino_t> req_id_{}, ans_id_{};
  Sealing seal_;
  py::object loads_;
};

// A self-check of the cipher against RFC 8439's test vector (section 2.4.2), for the tests.
py::bytes chacha20_test(const std::string& key, uint32_t counter, const std::string& nonce,
                        std::string data) {
  if (key.size() != 32 || nonce.size() != 12) throw std::invalid_argument("key 32, nonce 12 bytes");
  chacha20_xor(reinterpret_cast<const uint8_t*>(key.data()), counter,
               reinterpret_cast<const uint8_t*>(nonce.data()), data.data(), data.size());
  return py::bytes(data);
}

}  // namespace drawer

class Seal {
 public:
  Seal(int secret_fd, int result_fd, int out_dir_fd, std::string device, py::object make_inputs,
       py::object baseline, bool pass_shape)
      : result_fd_(result_fd), out_dir_fd_(out_dir_fd), device_(device),
        make_inputs_(make_inputs), baseline_(baseline), pass_shape_(pass_shape) {
    // The key (32 raw bytes, a newline), then the plan, then a line ``END``. Read byte by
    // byte so nothing after it (the timing gate's answer) is consumed here.
    std::string data;
    char c;
    while (true) {
      ssize_t n = ::read(secret_fd, &c, 1);
      if (n != 1) throw std::runtime_error("seal: the plan ended early");
      data += c;
      if (data.size() > 33 && c == '\n' && data.size() >= 37 &&
          data.compare(data.size() - 4, 4, "END\n") == 0 &&
          (data.size() == 37 || data[data.size() - 5] == '\n'))
        break;
      if (data.size() > (64u << 20)) throw std::runtime_error("seal: plan too large");
    }
    if (data[32] != '\n') throw std::runtime_error("seal: bad secret");
    data.resize(data.size() - 4);
    {
      Vault::Open o(vault_);
      Vault::Head& h = vault_.head();
      std::memcpy(h.key, data.data(), 32);
      uint8_t d[32];
      hmac_sha256(h.key, 32, "aka-seal-output-digest", d);
      std::memcpy(&h.digest_key, d, 8);
      h.digest_key = h.digest_key % (kP - 2) + 2;
      wipe(d, sizeof d);
    }
    wipe(&data[0], 33);
    parse(data.substr(33));
    freeze(&vault_, std::move(lists_), calls_, pairs_);
    calls_ = {};
    pairs_ = {};
    watch_faults();
    dev_ = c10::Device(device_);
    if (dev_.is_cuda() && dev_.index() < 0) dev_ = c10::Device(c10::kCUDA, 0);
    py::module_ torch = py::module_::import("torch");
    for (auto& name : dtype_names_) dtypes_.push_back(torch.attr(name.c_str()));
    if (dev_.is_cuda()) impl_ = c10::impl::getDeviceGuardImpl(c10::DeviceType::CUDA);
    // torch's two Python switches of the recorder answer to the core from here on, before
    // candidate code is imported: switching it off or clearing its callbacks does nothing
    // and is recorded. Nothing else holds the originals, so they are gone.
    py::cpp_function enable([](bool on) {
      if (!on) note_tamper("torch.autograd._enable_record_function(False) was called");
    }, py::arg("enable"));
    py::cpp_function clear([]() { note_tamper("torch._C._autograd._clear_callbacks() was called"); });
    py::module_ cag = py::module_::import("torch._C._autograd");
    cag.attr("_enable_record_function") = enable;
    cag.attr("_clear_callbacks") = clear;
    py::module_::import("torch.autograd").attr("_enable_record_function") = enable;
    // A redispatch (``OpOverload.redispatch``) runs an operator's kernel with no
    // RecordFunction: a way from Python past the recorder. It keeps working, and an
    // operator the task forbids, redispatched in a candidate call, is charged like one
    // called plainly. The original method is held here only.
    py::object handle = py::module_::import("torch._C").attr("_DispatchOperatorHandle");
    py::object redispatch = handle.attr("redispatch_boxed");
    handle.attr("redispatch_boxed") = py::cpp_function(
        [redispatch](py::object self, py::args args, py::kwargs kwargs) {
          int mode = g_sw.mode.load();
          if (mode == 1 || mode == 3) {
            charge(std::string(py::str(self.attr("schema")().attr("name"))), mode);
          }
          return redispatch(self, *args, **kwargs);
        },
        py::is_method(handle));
    add_sentry_audit();
    py::module_ sm = py::module_::import("signal");
    signals_ = QuietDraw::Signals{sm.attr("getsignal"), sm.attr("signal"), sm.attr("SIG_IGN"),
                                  sm.attr("SIG_DFL"), sm.attr("default_int_handler"), {},
                                  py::module_::import("gc").attr("callbacks")};
    for (py::handle n : sm.attr("valid_signals")()) {
      int k = py::int_(py::reinterpret_borrow<py::object>(n));
      // faults are the process's own (the core's fault handler, faulthandler): never
      // set aside, a fault inside the draw must still be said
      bool fault = k == SIGSEGV || k == SIGBUS || k == SIGFPE || k == SIGILL || k == SIGTRAP ||
                   k == SIGSYS || k == SIGABRT;
      if (k != SIGKILL && k != SIGSTOP && !fault) signals_.numbers.push_back(k);
    }
    py::object sys = py::module_::import("sys");
    if (py::hasattr(sys, "monitoring")) {
      py::object mon = sys.attr("monitoring");
      signals_.get_tool = mon.attr("get_tool");
      signals_.register_callback = mon.attr("register_callback");
      py::object events = mon.attr("events");
      for (py::handle name : py::module_::import("builtins").attr("dir")(events)) {
        py::object v = events.attr(name);
        if (!PyLong_Check(v.ptr())) continue;
        long bit = PyLong_AsLong(v.ptr());
        // one event each (NO_EVENTS and the deprecated aliases of two are left out)
        if (bit > 0 && (bit & (bit - 1)) == 0 &&
            std::find(signals_.events.begin(), signals_.events.end(), bit) == signals_.events.end())
          signals_.events.push_back(static_cast<int>(bit));
      }
    }
    code_at_start_ = exec_files();
    started_ns_ = wall_ns();
  }

  // No draw and no baseline call after this (the plan is over, or never ran).
  void stop_drawer() {
    drawer_.stop();
    timer_.stop();
  }
  // The harness's stop, after the plan: refused while the plan runs, where only candidate
  // code could ask (a red-team fork of the candidate's stopped the drawer with the key the
  // fork carried and served the draws itself).
  std::string forget_on_fork() { return vault_.forget_on_fork(); }

  void stop_drawer_after_plan() {
    if (in_plan_) throw std::runtime_error("seal: the drawer is stopped when the plan ends");
    stop_drawer();
  }
  // Whether this process is where candidate code runs (its drawer adopted, or its plan
  // run): no drawer or timer is served from here, and none from a fork of it.
  void refuse_serving() const {
    if (adopted_ || ran_)
      throw std::runtime_error("seal: draws are served from a drawer forked before the candidate's import");
  }

  // The core's ends of the processes forked from this one once the core was made, before
  // any candidate code: its drawer and the baseline's timer, each (pid, request fd,
  // answer fd) or None. ``channel``: the drawer's ("d"; "b" for the timer's own).
  void adopt_drawer(py::object draws, py::object timer, const std::string& channel) {
    if (ran_ || adopted_) throw std::runtime_error("seal: the drawer is adopted once, before the plan");
    drawer_.adopt(draws, sealing(channel));
    timer_.adopt(timer, sealing("t"));
    adopted_ = channel == "d";  // the evaluation process's (a timer adopts its own, "b")
  }

  // A drawer's side, in its forked process, until the stop request: it draws each call's
  // inputs with the reference's ``make_inputs`` and sends them on ``channel``.
  void serve_draws(py::object make_inputs, int rfd, int wfd, const std::string& channel) {
    refuse_serving();
    drawer::seclude({rfd, wfd});
    drawer::serve(make_inputs, rfd, wfd, sealing(channel), {});
  }

  // The baseline's timer, in its forked process, until the stop request; its own drawer
  // (adopted here) was forked from it before. Each baseline call is drawn from that drawer
  // and timed as this core times the candidate's calls in the evaluation process: the same
  // round trip for new values (or a ping and the kept set), buffers, poisoning, recorder
  // callback and clock, while the evaluation process waits for the answer as this one
  // waits for the next request while the candidate's call is timed. So the baseline's
  // timing is nowhere the candidate can reach, and an A/A still reads 1.
  void serve_baseline(int rfd, int wfd) {
    refuse_serving();
    std::vector<int> keep = drawer_.fds();
    keep.push_back(rfd);
    keep.push_back(wfd);
    drawer::seclude(keep);
    recorder_ = add_recorder();  // every timed call pays its callback, as in the core
    Armed armed;  // and switches the sentry's frame evaluator out and in around it
    Arm base;
    base.fn = baseline_;
    int64_t at = -1;
    auto one = [&](uint32_t k, int64_t r, int64_t seed, int32_t pattern, bool fresh) {
      if (k >= g_sw.n_pairs) throw std::runtime_error("no such pair in the plan");
      const Pair& p = g_sw.pairs[k];
      if (int64_t(k) != at) {  // a new pair: its own buffers, kept set and audits
        base.fresh_keep.clear();
        out_bytes_[0] = 0;
        kept_.clear();
        offered_ = 0;
        at = k;
      }
      py::tuple args, drawn;
      if (fresh || base.fresh_keep.empty()) {
        std::tie(args, drawn) = inputs(0, p.shape, p.dtype, seed);
        if (base.fresh_keep.empty()) base.fresh_keep.push_back(drawn);
      } else {
        ping_drawer();
        drawn = base.fresh_keep.front();
        args = write(0, p.shape, p.dtype, drawn);
      }
      poison(0, pattern);
      sync();
      std::pair<double, double> w = timed(0, base, args, p.shape, false);
      // What the core does after each candidate call, done here after each baseline call
      // and thrown away, so that each process enters its next window from the same work.
      check_recorder();
      offer(p, int(k), long(r), seed, base.out, args, drawn);
      if (THPVariable_Check(base.out.ptr())) {
        at::Tensor t = THPVariable_Unpack(base.out.ptr());
        out_bytes_[0] = int64_t(t.numel()) * t.element_size();
      }
      return w;
    };
    drawer::serve(py::none(), rfd, wfd, sealing("t"), one);
  }

  void send_py(const std::string& body) { frame("{\"kind\":\"py\",\"body\":" + jstr(body) + "}"); }

  // Runs the whole plan with ``candidate``: correctness calls, then every timing pair.
  // One-shot: a second run (candidate code calling it) is refused.
  // ``between``: called with a pair's index once that pair's last sample is taken, for
  // one pair before the last, a keyed one (nothing before tells which): the harness
  // looks there at what the plan's end sees too (the library's bindings). A stand-in that
  // a candidate binds after its calls and takes back before the plan ends is bound there
  // unless it knows which call of a pair is the last.
  ~Seal() { stop_drawer(); }

  void run(py::object candidate, py::object between) {
    if (ran_) throw std::runtime_error("seal: the plan has run");
    ran_ = in_plan_ = true;
    struct Stop {  // no draw after the plan, however it ends
      Seal& s;
      ~Stop() {
        s.in_plan_ = false;
        s.stop_drawer();
      }
    } stop{*this};
    candidate_ = candidate;
    recorder_ = add_recorder();
    size_t done = 0;
    bool failed = false;
    note_code();  // what importing the candidate loaded
    Armed armed;  // the sentry watches from here to the end of the plan
    for (uint32_t i = 0; i < g_sw.n_calls; i++) {
      failed = !correctness(g_sw.calls[i]) || failed;
      done++;
    }
    note_code();  // a library's mapping outlives the call that loaded it (Python never
                  // unloads an extension), so once per stage sees what the calls loaded
    last_ = at::Tensor();  // the device holds nothing of the correctness calls while timing
    frame("{\"kind\":\"mark\",\"name\":\"checked\"}");
    if (!failed && g_sw.n_pairs) {
      frame("{\"kind\":\"mark\",\"name\":\"gate\"}");
      char b;
      struct pollfd pfd = {0, POLLIN, 0};
      if (::poll(&pfd, 1, 600 * 1000) != 1 || ::read(0, &b, 1) != 1) {  // never ungated
        at::removeCallback(recorder_);
        set_armed(false);
        frame("{\"kind\":\"core_done\",\"calls\":" + std::to_string(done) +
              ",\"error\":\"the timing gate never opened\",\"code\":" + code_seen() +
              ",\"outside\":" + outside() + "}");
        return;
      }
      uint32_t look = g_sw.n_pairs > 1 ? uint32_t(prf("between") % (g_sw.n_pairs - 1)) : g_sw.n_pairs;
      for (uint32_t k = 0; k < g_sw.n_pairs; k++) {
        timing(int(k));
        note_code();
        if (k == look && !between.is_none()) between(int(k));
      }
    }
    at::removeCallback(recorder_);
    set_armed(false);
    std::string tamper = vault_.tamper();
    frame("{\"kind\":\"core_done\",\"calls\":" + std::to_string(done) + ",\"error\":null" +
          ",\"recorder\":" + (tamper.empty() ? std::string("null") : jstr(tamper)) +
          ",\"unlaunched\":" + unlaunched() +
          ",\"forged_launch\":" + (g_forged_launch.empty() ? std::string("null") : jstr(g_forged_launch)) +
          ",\"process\":" + (g_stray_process.empty() ? std::string("null") : jstr(g_stray_process)) +
          ",\"code\":" + code_seen() + ",\"outside\":" + outside() + "}");
  }

 private:
  int result_fd_, out_dir_fd_;
  std::string device_;
  c10::Device dev_{c10::kCPU};
  const c10::impl::DeviceGuardImplInterface* impl_ = nullptr;
  py::object make_inputs_, baseline_, candidate_;
  drawer::Client drawer_, timer_;  // this process's drawer, the baseline's timer
  uint64_t draws_ = 0;
  bool pass_shape_, ran_ = false, in_plan_ = false, adopted_ = false;
  at::CallbackHandle recorder_ = 0;
  std::set<std::string> code_at_start_;
  QuietDraw::Signals signals_;
  std::map<std::string, bool> code_new_;  // path: changed after the core started
  int64_t started_ns_ = 0;

  static int64_t wall_ns() {
    struct timespec ts;
    ::clock_gettime(CLOCK_REALTIME, &ts);
    return int64_t(ts.tv_sec) * 1000000000 + ts.tv_nsec;
  }

  // Files mapped executable since the core was created, kept once seen (unmapping one
  // later does not take it back).
  void note_code() {
    for (auto& path : exec_files()) {
      if (code_at_start_.count(path) || code_new_.count(path)) continue;
      struct stat st;  // a file that cannot be stat'ed (deleted, memfd) counts as new
      code_new_[path] = ::stat(path.c_str(), &st) != 0 ||
                        int64_t(st.st_ctim.tv_sec) * 1000000000 + st.st_ctim.tv_nsec >= started_ns_;
    }
  }

  struct Armed {  // the sentry on for one scope (off again however it ends)
    Armed() { set_armed(true); }
    ~Armed() { set_armed(false); }
    Armed(const Armed&) = delete;
    Armed& operator=(const Armed&) = delete;
  };

  // What the sentry saw: null, the first frame of the candidate's outside its calls, or
  // why there is no sentry on this Python.
  std::string outside() {
    if (!kSentry) return "{\"unavailable\":" + jstr("not on Python " PY_VERSION) + "}";
    std::string seen = vault_.outside(), made = vault_.made(), thread = vault_.thread();
    auto or_null = [](const std::string& v) { return v.empty() ? std::string("null") : jstr(v); };
    return "{\"seen\":" + or_null(seen) + ",\"made\":" + or_null(made) + ",\"thread\":" +
           or_null(thread) + "}";
  }

  std::string code_seen() const {
    std::string out = "[";
    for (auto& [path, fresh] : code_new_) {
      out += (out.size() > 1 ? "," : "") + std::string("{\"path\":") + jstr(path) +
             ",\"fresh\":" + (fresh ? "true" : "false") + "}";
    }
    return out + "]";
  }

  // The plan's calls that returned and those of them that launched no Triton kernel, in
  // the core's last frame when the launch hook was given (a Triton task): the verdict reads
  // them there, not from the harness's Python, whose state candidate code can rewrite (a
  // red-team file emptied the hook's list, and no call was then asked to launch).
  static std::string unlaunched() {
    if (!g_hook_code) return "null";
    return "[" + std::to_string(g_unlaunched.load()) + "," + std::to_string(g_returned.load()) + "]";
  }

  // A call of the candidate with the operator recorder on, as every one of its calls is.
  py::object recorded(const py::object& fn, const py::tuple& args, int shape, int mode = 1) {
    Recording on(mode, mode == 1 ? kWatchOff : kWatchBaseline);
    return called(fn, args, shape, mode);
  }

  // A call with the recorder already switched to ``mode`` (a timed call switches it
  // before its window opens: flipping the switch costs two system calls).
  py::object called(const py::object& fn, const py::tuple& args, int shape, int mode) {
    g_launched = false;
    py::object out = invoke(fn, args, shape);
    if (mode == 1) {
      g_returned++;
      if (!g_launched) g_unlaunched++;
    }
    return out;
  }

  // After every candidate call (outside any timed window): an operator of the core's own
  // must still reach the recorder. One switched off and left off, or whose callback was
  // removed, is recorded and put back for the next call.
  void check_recorder() {
    census({drawer_.pid(), timer_.pid()});
    if (!at::isRecordFunctionEnabled()) {
      note_tamper("the operator recorder was switched off in a candidate call");
      at::enableRecordFunction(true);
    }
    g_alive = false;
    {
      Recording probe(2, kWatchBetween);
      NoPython np;
      (void)at::empty({0});
    }
    if (!g_alive) {
      note_tamper("the operator recorder's callback was removed in a candidate call");
      recorder_ = add_recorder();
    }
  }
  Vault vault_;
  // The plan's forbidden and allowed operators, task files, library folders and editable
  // files, until they are frozen for the recorder (``freeze``).
  std::vector<std::vector<std::string>> lists_ = std::vector<std::vector<std::string>>(5);
  std::vector<py::dict> shapes_;
  std::vector<std::string> dtype_names_;
  std::vector<py::object> dtypes_;
  std::vector<Call> calls_;  // as parsed; the core runs the frozen copies (``g_sw``)
  std::vector<Pair> pairs_;
  std::vector<std::vector<at::Tensor>> buffers_[2];  // per arm, per shape x dtype
  int64_t out_bytes_[2] = {0, 0};
  int files_ = 0;

  // The plan's text, one record per line, fields split on spaces. No iostreams: the
  // interpreter may have loaded a libstdc++ whose locale facets this build does not match.
  static std::vector<std::string> split(const std::string& line) {
    std::vector<std::string> out;
    size_t i = 0;
    while (i < line.size()) {
      while (i < line.size() && line[i] == ' ') i++;
      size_t j = i;
      while (j < line.size() && line[j] != ' ') j++;
      if (j > i) out.push_back(line.substr(i, j - i));
      i = j;
    }
    return out;
  }
  static int64_t num(const std::vector<std::string>& f, size_t i) {
    if (i >= f.size()) throw std::runtime_error("seal: short plan line");
    return std::strtoll(f[i].c_str(), nullptr, 10);
  }
  static double real(const std::vector<std::string>& f, size_t i) {
    if (i >= f.size()) throw std::runtime_error("seal: short plan line");
    return std::strtod(f[i].c_str(), nullptr);
  }

  void parse(const std::string& plan) {
    size_t start = 0;
    while (start < plan.size()) {
      size_t end = plan.find('\n', start);
      if (end == std::string::npos) end = plan.size();
      std::string line = plan.substr(start, end - start);
      std::vector<std::string> f = split(line);
      start = end + 1;
      if (f.empty()) continue;
      const std::string& tag = f[0];
      if (tag == "S") {
        py::dict d = shape_fields(f, 2);
        shapes_.push_back(d);
      } else if (tag == "T") {  // a path: the rest of the line, spaces included
        lists_[2].push_back(line.substr(2));
      } else if (tag == "E") {
        lists_[4].push_back(line.substr(2));
      } else if (tag == "F") {
        lists_[0].push_back(f[1]);
      } else if (tag == "A") {
        lists_[1].push_back(f[1]);
      } else if (tag == "L") {
        lists_[3].push_back(line.substr(2));
      } else if (tag == "D") {
        if (f.size() < 3) throw std::runtime_error("seal: short plan line");
        dtype_names_.push_back(f[2]);
      } else if (tag == "C") {
        Call c;
        if (f.size() < 6) throw std::runtime_error("seal: short plan line");
        if (f[1].size() >= sizeof c.nonce) throw std::runtime_error("seal: nonce too long");
        std::memcpy(c.nonce, f[1].data(), f[1].size());
        c.shape = int(num(f, 2));
        c.dtype = int(num(f, 3));
        c.seed = num(f, 4);
        c.poison = int(num(f, 5));
        calls_.push_back(c);
      } else if (tag == "P") {
        Pair p;
        p.shape = int(num(f, 1)); p.dtype = int(num(f, 2)); p.seed = num(f, 3);
        p.rel_ci = real(f, 4); p.max_time = real(f, 5); p.min_samples = int(num(f, 6));
        p.max_samples = int(num(f, 7)); p.warmup = int(num(f, 8)); p.graph = int(num(f, 9));
        p.audit_permille = int(num(f, 10)); p.spin_s = real(f, 11); p.graph_below = real(f, 12);
        p.flush_factor = real(f, 13);
        if (f.size() > 14) p.audit_max = int(num(f, 14));
        if (f.size() > 15) p.fresh_max_s = real(f, 15);
        if (f.size() > 16) p.audit_bytes = num(f, 16);
        if (f.size() > 17) p.audit_sample = num(f, 17);
        pairs_.push_back(p);
      } else {
        throw std::runtime_error("seal: unknown plan line " + tag);
      }
    }
    for (auto& c : calls_)
      if (c.shape < 0 || c.shape >= int(shapes_.size()) || c.dtype < 0 ||
          c.dtype >= int(dtype_names_.size()))
        throw std::runtime_error("seal: plan names an unknown shape or dtype");
    for (auto& p : pairs_)
      if (p.shape < 0 || p.shape >= int(shapes_.size()) || p.dtype < 0 ||
          p.dtype >= int(dtype_names_.size()))
        throw std::runtime_error("seal: plan names an unknown shape or dtype");
  }

  void frame(const std::string& payload) {
    uint8_t mac[32];
    {
      Vault::Open o(vault_);
      hmac_sha256(vault_.head().key, 32, payload, mac);
    }
    uint32_t n = uint32_t(payload.size());
    uint8_t hdr[4] = {uint8_t(n >> 24), uint8_t(n >> 16), uint8_t(n >> 8), uint8_t(n)};
    std::string data(reinterpret_cast<char*>(hdr), 4);
    data.append(reinterpret_cast<char*>(mac), 32);
    data += payload;
    size_t off = 0;
    while (off < data.size()) {
      ssize_t w = ::write(result_fd_, data.data() + off, data.size() - off);
      if (w <= 0) throw std::runtime_error("seal: result pipe closed");
      off += size_t(w);
    }
  }

  uint64_t digest_key() {
    Vault::Open o(vault_);
    return vault_.head().digest_key;
  }

  uint64_t prf(const std::string& what) {
    uint8_t d[32];
    {
      Vault::Open o(vault_);
      hmac_sha256(vault_.head().key, 32, what, d);
    }
    uint64_t v;
    std::memcpy(&v, d, 8);
    return v;
  }

  // The seed of a timed call's inputs: a keyed draw of its own per (what, shape, round,
  // arm), never a step from the pair's seed. A candidate can learn the seed of the inputs
  // it was handed (a task's ``make_inputs`` that seeds torch's global generator and leaves
  // it so, for ``torch.initial_seed()``; a search over its 2^31 values against the inputs
  // otherwise), and with seeds in a progression it would draw every later round's
  // inputs itself, answer them in a call nobody times, and serve the timed calls from a
  // table of fresh-looking answers. Keyed, knowing one seed tells it nothing of the next.
  // 31 bits, as every task's ``make_inputs`` takes (numpy's legacy seeding stops at 2^32).
  int64_t draw_seed(const char* what, int k, long r, int a) {
    return int64_t(prf(std::string(what) + ":" + std::to_string(k) + ":" + std::to_string(r) + ":" +
                       std::to_string(a)) & 0x7fffffffULL);
  }

  // The seed of arm ``a``'s set for round ``r``: the baseline's one set a pair is drawn
  // from the plan's seed for the pair, the same values as in the process that times the
  // baseline alone, whose comparison with this one is fairest on the same work; the
  // candidate's are keyed draws (``draw_seed``).
  int64_t arm_seed(const char* what, const Pair& p, int k, long r, int a) {
    return a == 0 ? p.seed + 1 : draw_seed(what, k, r, a);
  }

  void sync() {
    if (impl_) impl_->synchronizeDevice(dev_.index() < 0 ? 0 : dev_.index());
  }

  // Fresh values for (arm, shape, dtype, seed), written into that arm's buffers for the
  // shape: the call sees the same tensors at the same addresses every time, new values.
  //
  // The operator recorder is on meanwhile, as in a candidate call: ``make_inputs`` is
  // Python that looks torch's names up as it runs, and a candidate that rebound one
  // (``torch.__dict__["where"] = hook``) ran code of its own there, outside every call,
  // computing the answer from the inputs as they were drawn. The reference's own
  // operators are task code (its file is among the plan's task files): sites, weighed
  // against its baseline's like any other; an operator the candidate's code runs here is
  // the candidate's.
  //
  // With a drawer, none of that runs here: the drawer draws, and the tensors are read from
  // its answer (``drawer::Client``), the nonce a keyed draw of this core's own.
  // Each request's nonce: a keyed draw of this core's own, never repeated.
  uint64_t drawer_nonce() { return prf("drawer:" + std::to_string(draws_++)); }

  // The sealing of one of this process's channels, keyed from the vault (every process
  // that speaks on them was forked from this core after it read its key).
  drawer::Sealing sealing(const std::string& channel) {
    return {[this](const std::string& label, uint8_t out[32]) {
              Vault::Open o(vault_);
              hmac_sha256(vault_.head().key, 32, label, out);
            },
            channel};
  }

  void ping_drawer() {
    if (drawer_.on()) drawer_.ping(drawer_nonce());
  }

  py::tuple generate(int shape, int dtype, int64_t seed) {
    if (drawer_.on())
      return drawer_.draw(drawer_nonce(), shapes_[shape], dtype_names_[dtype], device_, seed);
    NoUserModes clean;
    QuietDraw quiet(signals_);
    Recording on(1, kWatchInputs);
    // a copy: what ``make_inputs`` is handed it may keep or change, never the plan's sizes
    return py::tuple(make_inputs_(py::dict(shapes_[shape]), dtypes_[dtype], device_, seed));
  }

  // ``fresh`` written into arm's buffers for the shape: the call sees the same tensors at
  // the same addresses every time, with new values.
  py::tuple write(int arm, int shape, int dtype, const py::tuple& fresh) {
    size_t slot = size_t(shape) * dtype_names_.size() + size_t(dtype);
    auto& all = buffers_[arm];
    if (all.size() <= slot) all.resize(slot + 1);
    auto& bufs = all[slot];
    py::tuple args(fresh.size());
    size_t t = 0;
    NoPython np;
    for (size_t i = 0; i < fresh.size(); i++) {
      py::object a = fresh[i];
      if (THPVariable_Check(a.ptr())) {
        at::Tensor src = THPVariable_Unpack(a.ptr());
        if (t >= bufs.size() || !bufs[t].sizes().equals(src.sizes()) ||
            bufs[t].dtype() != src.dtype()) {
          if (t < bufs.size()) bufs.resize(t);
          bufs.push_back(src.clone());
        } else {
          bufs[t].copy_(src);
        }
        args[i] = py::reinterpret_steal<py::object>(THPVariable_Wrap(bufs[t]));
        t++;
      } else {
        args[i] = a;
      }
    }
    return args;
  }

  std::pair<py::tuple, py::tuple> inputs(int arm, int shape, int dtype, int64_t seed) {
    py::tuple fresh = generate(shape, dtype, seed);
    return {write(arm, shape, dtype, fresh), fresh};
  }

  void poison(int arm, int pattern) {
    if (out_bytes_[arm] <= 0) return;
    NoPython np;
    at::Tensor p = at::empty({out_bytes_[arm]}, at::TensorOptions().dtype(at::kByte).device(dev_));
    p.fill_(pattern & 0xff);
  }

  py::object invoke(const py::object& fn, const py::tuple& args, int shape) {
    if (pass_shape_) return fn(*args, **shapes_[shape]);
    return fn(*args);
  }

  // Why ``out`` is not a plain dense tensor on the evaluation device, in memory of its own
  // (empty: it is). An output that shares memory with an input is a view of it (a
  // transpose answered with ``x.t()``, no data moved) or was written over it: what the
  // core saves reads the right values, but the kernel did none of the work. Whole
  // storages are compared, so a view at any offset or stride counts.
  std::string not_plain(const py::object& out, const py::tuple& args) {
    if (!THPVariable_CheckExact(out.ptr())) {
      std::string tn = py::str(py::type::of(out).attr("__qualname__"));
      return "output is " + tn + ", not a plain torch.Tensor";
    }
    at::Tensor t = THPVariable_Unpack(out.ptr());
    if (t.layout() != at::kStrided || t.is_conj() || t.is_neg())
      return "output is not dense (layout or lazy conj/neg bits)";
    if (t.device().type() != dev_.type()) return "output is on another device";
    for (size_t i = 0; i < args.size(); i++) {
      if (!THPVariable_Check(args[i].ptr())) continue;
      if (shares_memory(t, THPVariable_Unpack(args[i].ptr())))
        return "output shares memory with input " + std::to_string(i) +
               " (a view of it, or written over it): an output must be memory of its own";
    }
    return "";
  }

  static bool shares_memory(const at::Tensor& a, const at::Tensor& b) {
    if (!a.has_storage() || !b.has_storage() || a.device() != b.device()) return false;
    auto lo_a = reinterpret_cast<uintptr_t>(a.storage().data());
    auto lo_b = reinterpret_cast<uintptr_t>(b.storage().data());
    size_t n_a = a.storage().nbytes(), n_b = b.storage().nbytes();
    if (n_a == 0 || n_b == 0 || lo_a == 0 || lo_b == 0) return false;
    return lo_a < lo_b + n_b && lo_b < lo_a + n_a;
  }

  bool mutated(const py::tuple& args, const py::tuple& fresh) {
    NoPython np;
    for (size_t i = 0; i < args.size(); i++) {
      if (!THPVariable_Check(args[i].ptr())) continue;
      at::Tensor a = THPVariable_Unpack(args[i].ptr()), f = THPVariable_Unpack(fresh[i].ptr());
      if (!a.sizes().equals(f.sizes()) || !at::equal(a, f)) return true;
    }
    return false;
  }

  // Writes the output to a new file in the output folder; returns the record's fields.
  // The bytes go straight from the device into the file's pages (one copy, no staging
  // tensor); the space is reserved first, so a full disk is an error, not a SIGBUS.
  // ``kept``: the digest the bytes had when they were kept (an audit's copy waits in this
  // process's memory until its pair ends); the record carries it, so a copy changed while
  // it waited fails the checker's digest check like a rewritten file.
  std::string save(const at::Tensor& out_dev, const uint64_t* kept = nullptr) {
    NoPython np;
    at::Tensor src = out_dev.detach();
    std::string name = "o" + std::to_string(files_++) + ".bin";
    int fd = ::openat(out_dir_fd_, name.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (fd < 0) throw std::runtime_error("seal: cannot create an output file");
    size_t n = size_t(src.numel()) * src.element_size();
    uint64_t dk = digest_key();
    uint64_t dg = poly_hash(nullptr, 0, dk);
    if (n > 0) {
      if (::posix_fallocate(fd, 0, off_t(n)) != 0) {
        ::close(fd);
        throw std::runtime_error("seal: no room for an output file");
      }
      void* m = ::mmap(nullptr, n, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
      if (m == MAP_FAILED) { ::close(fd); throw std::runtime_error("seal: cannot map an output file"); }
      at::from_blob(m, src.sizes(), at::TensorOptions().dtype(src.dtype())).copy_(src);
      dg = poly_hash(static_cast<const uint8_t*>(m), n, dk);
      ::munmap(m, n);
    }
    ::close(fd);
    wipe(&dk, sizeof dk);
    if (kept) dg = *kept;
    std::string sizes = "[";
    for (int64_t i = 0; i < src.dim(); i++) sizes += (i ? "," : "") + std::to_string(src.size(i));
    sizes += "]";
    char hex16[24];
    snprintf(hex16, sizeof hex16, "%016llx", (unsigned long long)dg);
    return "\"file\":" + jstr(name) + ",\"digest\":\"" + hex16 + "\",\"nbytes\":" +
           std::to_string(n) + ",\"out_dtype\":" + jstr(std::string(c10::toString(src.scalar_type()))) +
           ",\"out_shape\":" + sizes + ",\"out_contiguous\":" + (src.is_contiguous() ? "true" : "false");
  }

  // A correctness call's output, saved; a call on the same inputs as the one before it
  // (its twin) whose output is bitwise the same reuses that file, so the checker reads
  // and judges those bytes once. Compared on the device: nothing is copied for it.
  std::string save_case(const Call& c, const at::Tensor& t) {
    NoPython np;
    bool same = last_.defined() && last_call_.shape == c.shape && last_call_.dtype == c.dtype &&
                last_call_.seed == c.seed && last_.scalar_type() == t.scalar_type() &&
                last_.sizes().equals(t.sizes()) && last_.device() == t.device() &&
                (t.numel() == 0 ||
                 at::equal(last_.reshape(-1).view(at::kByte), t.reshape(-1).view(at::kByte)));
    if (same) {
      last_ = at::Tensor();
      return last_fields_;
    }
    last_fields_ = save(t);
    last_call_ = c;
    last_ = t.detach().clone();
    return last_fields_;
  }
  at::Tensor last_;
  Call last_call_;
  std::string last_fields_;

  void clear_ops() { vault_.clear_ops(); }

  std::string ops_seen() { return names_json(vault_.ops()); }
  static std::string names_json(const std::vector<std::string>& names) {
    std::string out = "[";
    for (auto& o : names) out += (out.size() > 1 ? "," : "") + jstr(o);
    return out + "]";
  }

  static std::string short_error(py::error_already_set& e) {
    std::string s = e.what();
    return s.size() > 2000 ? s.substr(0, 2000) : s;
  }

  bool correctness(const Call& c) {
    std::string rec = "{\"kind\":\"call\",\"nonce\":" + jstr(c.nonce) + ",\"seed\":" +
                      std::to_string(c.seed) + ",\"poison\":" + std::to_string(c.poison);
    bool ok = true;
    try {
      clear_ops();  // what drawing the inputs ran counts with the call
      auto [args, fresh] = inputs(1, c.shape, c.dtype, c.seed);
      poison(1, c.poison);
      sync();
      double t0 = now_s();
      py::object out;
      try {
        out = recorded(candidate_, args, c.shape);
        sync();
      } catch (...) {
        check_recorder();
        throw;
      }
      double wall = now_s() - t0;
      check_recorder();
      rec += ",\"ops\":" + ops_seen() + ",\"wall_s\":" + jnum(wall) + ",\"mutated\":" +
             (mutated(args, fresh) ? "true" : "false");
      std::string why = not_plain(out, args);
      if (!why.empty()) {
        rec += ",\"error\":" + jstr(why) + ",\"plain\":false";
      } else {
        at::Tensor t = THPVariable_Unpack(out.ptr());
        out_bytes_[1] = int64_t(t.numel()) * t.element_size();
        rec += ",\"plain\":true," + save_case(c, t);
      }
    } catch (py::error_already_set& e) {
      rec += ",\"error\":" + jstr(short_error(e));
      ok = false;
    }
    frame(rec + "}");
    return ok;
  }

  // ---- timing ------------------------------------------------------------------------

  struct Arm {
    py::object fn;
    std::vector<py::tuple> fresh_keep;
    py::object out;
#ifdef AKA_SEAL_CUDA
    std::unique_ptr<at::cuda::CUDAGraph> graph;
    bool graph_replay() {
      if (!graph) return false;
      graph->replay();
      return true;
    }
#else
    bool graph_replay() { return false; }
#endif
  };

  std::vector<py::tuple> pool_;
  std::vector<int64_t> pool_seeds_;
  static constexpr int kPool = 8;
  // With a pool, about one round in kFreshEvery gets a set never seen before (keyed draw),
  // and each candidate sample is tagged: a kernel that serves inputs it has seen from a
  // cache of its outputs is fast on pool rounds only, which the evaluator compares.
  static constexpr int kFreshEvery = 4;
  static constexpr int kWatchEvery = 4;  // one round in this many: the baseline watched
  bool fresh_round_ = false;
  std::pair<int, long> pattern_at_{-1, -1};
  int pattern_ = 0;

  // Fresh values for every timed call unless generating them costs more than
  // ``fresh_max_s``: then eight sets are generated up front and each call gets one of them
  // by a keyed draw (recorded in the method as ``pool``), but for the fresh rounds.
  // With a drawer, every call's set is new: a pooled set would reach its window after a
  // ping and a new one after the drawer's work and the bytes' copy, and that difference
  // alone made honest kernels' calls on new sets twice as slow as on pooled ones on a CPU,
  // which is what the replay check looks for (``aka.eval._drawer``).
  std::string choose_inputs(const Pair& p, int k) {
    pool_.clear();
    pool_seeds_.clear();
    if (drawer_.on()) return "fresh values every call, drawn in the drawer";
    sync();
    double t0 = now_s();
    py::tuple probe = generate(p.shape, p.dtype, p.seed);
    sync();
    double cost = now_s() - t0;
    if (cost <= p.fresh_max_s) return "fresh values every call";
    for (int j = 0; j < kPool; j++) {
      int64_t seed = draw_seed("pool", k, j, 1);
      pool_seeds_.push_back(seed);
      pool_.push_back(generate(p.shape, p.dtype, seed));
    }
    char b[96];
    snprintf(b, sizeof b, "a keyed pick of %d fresh sets per call, a new set in about 1 round in %d (generation %.2g s)",
             kPool, kFreshEvery, cost);
    return b;
  }
  std::string audits_;
  int64_t spin_cycles_ = 0, flush_bytes_ = 0;
  at::Tensor flush_;
#ifdef AKA_SEAL_CUDA
  void* ev_[2] = {nullptr, nullptr};
#endif

  // One window: flush, spin, start, ``body``, end, device-wide sync.
  template <class F>
  std::pair<double, double> window(F&& body) {
    if (!impl_) {
      double t0 = now_s();
      body();
      double dt = now_s() - t0;
      return {dt, dt};
    }
#ifdef AKA_SEAL_CUDA
    {
      // The core's own operator, in the window but before the call: the recorder is
      // already switched to the arm (``timed``) and must not charge it.
      NoPython np;
      at::DisableRecordFunctionGuard own;
      if (flush_.defined()) flush_.zero_();
    }
    if (spin_cycles_) at::cuda::sleep(spin_cycles_);
    c10::Stream s = impl_->getStream(dev_);
    double h0 = now_s();
    impl_->record(&ev_[0], s, dev_.index(), c10::EventFlag::BACKEND_DEFAULT);
    body();
    impl_->record(&ev_[1], s, dev_.index(), c10::EventFlag::BACKEND_DEFAULT);
    sync();
    double h1 = now_s();
    double ms = impl_->elapsedTime(ev_[0], ev_[1], dev_.index());
    return {ms / 1e3, h1 - h0};
#else
    throw std::runtime_error("seal: built without CUDA");
#endif
  }

  static double median(std::vector<double> v) {
    if (v.empty()) return NAN;
    size_t m = v.size() / 2;
    std::nth_element(v.begin(), v.begin() + m, v.end());
    double hi = v[m];
    if (v.size() % 2) return hi;
    return (hi + *std::max_element(v.begin(), v.begin() + m)) / 2;
  }

  // Relative half-width of the median's 95 % CI by order statistics.
  static double rel_half(std::vector<double> v) {
    size_t n = v.size();
    if (n < 3) return INFINITY;
    std::sort(v.begin(), v.end());
    double z = 1.959964, half = z * std::sqrt(double(n)) / 2;
    long lo = std::max(0L, long(std::floor(n / 2.0 - half)));
    long hi = std::min(long(n) - 1, long(std::ceil(n / 2.0 + half)));
    double med = median(v);
    return med > 0 ? (v[size_t(hi)] - v[size_t(lo)]) / 2 / med : INFINITY;
  }

  // Arm ``a``'s call: the candidate's recorded as in its checked calls; the baseline's
  // with the same callback on but nothing kept, so both arms pay the same per operator
  // and a baseline timed against itself still reads 1.
  py::object call_arm(int a, const py::object& fn, const py::tuple& args, int shape) {
    return recorded(fn, args, shape, a == 1 ? 1 : 3);
  }

  // Arm ``a``'s call in a window, the recorder switched before it opens and after it
  // closes (two system calls each way, outside the time).
  // ``watched``: a baseline call with the sentry on (its samples are let go).
  std::pair<double, double> timed(int a, Arm& arm, const py::tuple& args, int shape, bool watched) {
    int mode = a == 1 ? 1 : 3;
    Recording on(mode, watched ? kWatchBaseline : kWatchOff);
    return window([&] {
      if (!arm.graph_replay()) arm.out = called(arm.fn, args, shape, mode);
    });
  }

  // One call of arm ``a`` in round ``r``: fresh values in the buffers, then the window.
  // ``audit``: kNone (warm-up), kOffer (a round of the loop: offered to the reservoir of
  // audits) or kNow (the last call: saved and judged whatever happened before).
  // ``watched``: the sentry is on in the baseline's call (warm-up calls and the watched
  // rounds of the loop, whose samples are let go).
  std::pair<double, double> sample(Arm* arms, int a, const Pair& p, int k, long r, int audit,
                                   bool watched = false) {
    watched = a == 0 && (watched || audit == kNone);
    // The candidate gets fresh values in its buffers for every call; the baseline (the
    // task's own code, nothing to catch) keeps its first set, generated once per pair but
    // written into its buffers before every call like the candidate's, with the same
    // poisoning and sync: both arms enter each window from the same device activity.
    // With a timer, the baseline's call is drawn and timed there, where no candidate code
    // runs (``serve_baseline``): it draws new values whenever the candidate does.
    Arm& arm = arms[a];
    if (pattern_at_ != std::make_pair(k, r))  // one keyed draw a round: both arms alike
      pattern_at_ = {k, r}, pattern_ = int(prf("poison:" + std::to_string(k) + ":" + std::to_string(r)) & 0xff);
    int pattern = pattern_;
    bool draws_too = pool_.empty() || fresh_round_;
    if (a == 0 && timer_.on())
      return timer_.time(drawer_nonce(), uint32_t(k), r, arm_seed("round", p, k, r, a), pattern,
                         draws_too);
    // Without a timer but with a drawer, the baseline draws from it whenever the candidate
    // does, so that both arms enter each window from the same round trip.
    if (a == 0 && !arm.fresh_keep.empty() && !(drawer_.on() && draws_too)) {
      ping_drawer();
      py::tuple args = write(a, p.shape, p.dtype, arm.fresh_keep.front());
      poison(a, pattern);
      sync();
      return timed(a, arm, args, p.shape, watched);
    }
    int64_t seed = arm_seed("round", p, k, r, a);
    py::tuple args, fresh;
    if (a == 1 && !pool_.empty() && !fresh_round_) {  // slow generation: a keyed pick
      size_t j = size_t(prf("pool:" + std::to_string(k) + ":" + std::to_string(r)) % pool_.size());
      seed = pool_seeds_[j];
      fresh = pool_[j];
      ping_drawer();
      args = write(a, p.shape, p.dtype, fresh);
    } else {
      std::tie(args, fresh) = inputs(a, p.shape, p.dtype, seed);
    }
    if (a == 0 && arm.fresh_keep.empty()) arm.fresh_keep.push_back(fresh);
    poison(a, pattern);
    sync();
    std::pair<double, double> w = timed(a, arm, args, p.shape, watched);
    if (a == 1) check_recorder();
    if (audit == kOffer && a == 1) offer(p, k, r, seed, arm.out, args, fresh);
    if (audit == kNow && a == 1) {
      Kept now = keep(p, k, r, seed, arm.out, args, fresh);
      audits_ += (audits_.empty() ? "" : ",") + audit_record(now);
    }
    if (THPVariable_Check(arm.out.ptr())) {  // each arm's freed memory is poisoned alike
      at::Tensor t = THPVariable_Unpack(arm.out.ptr());
      out_bytes_[a] = int64_t(t.numel()) * t.element_size();
    }
    return w;
  }

  // ---- audits of timed candidate calls: a uniform sample of every round -----------------
  //
  // Which timed calls are judged must be as likely for the last rounds of a pair as for the
  // first: a fixed number drawn from the first rounds leaves every later call unjudged once
  // they are spent, and a kernel that counts rounds (it can watch the baseline's calls too)
  // would answer right early and fast and wrong after. So the rounds of the loop feed a
  // reservoir (keyed draws, the same for every round whatever the candidate does: round t
  // stays with probability size/t), and when the loop stops a keyed subset of it (the
  // plan's audit_permille of the rounds, at most all it holds; the evaluator asks for all)
  // is saved and judged, plus the last call. Each round of the loop is judged with the
  // same probability, known to no one before the pair ends.
  static constexpr int kNone = 0, kOffer = 1, kNow = 2;

  struct Kept {
    long round = 0;
    int64_t seed = 0;
    std::string why, sampled;  // not a plain tensor: why; a sampled audit: where
    at::Tensor out;  // a host copy of the output (or of its keyed sample)...
    uint64_t digest = 0;  // ...and its keyed digest when it was taken
    bool mutated = false;
  };
  std::vector<Kept> kept_;
  long offered_ = 0;

  // The output of a call as an audit keeps it: whole, or past ``audit_sample`` elements a
  // keyed sample of that many: elements start + i * stride (mod n), the stride coprime to
  // n so they are distinct and spread over the whole output. Neither is known before the
  // call returns; the checker takes the same elements of the reference. A sampled audit
  // costs the same at any size, so large outputs get as many audits as small ones.
  Kept keep(const Pair& p, int k, long r, int64_t seed, const py::object& out,
            const py::tuple& args, const py::tuple& fresh) {
    Kept s;
    s.round = r;
    s.seed = seed;
    s.mutated = mutated(args, fresh);
    s.why = not_plain(out, args);
    if (!s.why.empty()) return s;
    at::Tensor t = THPVariable_Unpack(out.ptr());
    NoPython np;
    int64_t n = t.numel();
    if (p.audit_sample <= 0 || n <= p.audit_sample) {
      s.out = host_copy(t.detach(), s.digest);
      return s;
    }
    uint64_t key = prf("sample:" + std::to_string(k) + ":" + std::to_string(r));
    int64_t start = int64_t(key % uint64_t(n));
    int64_t stride = int64_t((key >> 20) % uint64_t(n - 1)) + 1;
    while (std::gcd(stride, n) != 1) stride = stride % (n - 1) + 1;
    std::string sizes = "[";
    for (int64_t i = 0; i < t.dim(); i++) sizes += (i ? "," : "") + std::to_string(t.size(i));
    sizes += "]";
    at::Tensor idx = at::arange(p.audit_sample, at::TensorOptions().dtype(at::kLong).device(t.device()));
    // start + i * stride (mod n) without overflow: i * stride < 2^63 needs n below
    // 2^63 / audit_sample, far above any output that fits a device.
    idx = at::remainder(idx * stride + start, n);
    s.out = host_copy(t.detach().reshape({-1}).index_select(0, idx), s.digest);
    s.sampled = ",\"sampled\":{\"start\":" + std::to_string(start) + ",\"stride\":" +
                std::to_string(stride) + ",\"count\":" + std::to_string(p.audit_sample) +
                ",\"shape\":" + sizes + "}";
    return s;
  }

  // A copy of ``t`` in host memory the core owns, and its keyed digest taken now: what
  // runs later in this process can reach the copy, but not change it unseen.
  at::Tensor host_copy(const at::Tensor& t, uint64_t& digest) {
    at::Tensor host = at::empty(t.sizes(), t.options().device(at::kCPU));
    host.copy_(t);
    size_t n = size_t(host.numel()) * host.element_size();
    uint64_t dk = digest_key();
    digest = poly_hash(n ? static_cast<const uint8_t*>(host.data_ptr()) : nullptr, n, dk);
    wipe(&dk, sizeof dk);
    return host;
  }

  // A kept call as the checker reads it, its output saved to a file now.
  std::string audit_record(const Kept& s) {
    std::string rec = "{\"round\":" + std::to_string(s.round) + ",\"seed\":" + std::to_string(s.seed);
    if (!s.why.empty()) rec += ",\"error\":" + jstr(s.why);
    else rec += "," + save(s.out, &s.digest) + s.sampled;
    if (s.mutated) rec += ",\"mutated\":true";
    return rec + "}";
  }

  // How many outputs the reservoir holds: audit_max, and no more than fit in audit_bytes
  // (a sampled audit holds at most audit_sample elements of at most 8 bytes).
  size_t reservoir_size(const Pair& p) const {
    int64_t each = p.audit_sample > 0 ? std::min(out_bytes_[1], 8 * p.audit_sample) : out_bytes_[1];
    int64_t size = std::max(p.audit_max, 0);
    if (p.audit_bytes > 0 && each > 0) size = std::min(size, p.audit_bytes / each);
    return size_t(std::max<int64_t>(size, 0));
  }

  void offer(const Pair& p, int k, long r, int64_t seed, const py::object& out,
             const py::tuple& args, const py::tuple& fresh) {
    size_t size = reservoir_size(p);
    long t = offered_++;
    size_t slot = kept_.size();
    if (slot >= size) {
      slot = size_t(prf("audit:" + std::to_string(k) + ":" + std::to_string(r)) % uint64_t(t + 1));
      if (slot >= size) return;
    } else {
      kept_.emplace_back();
    }
    kept_[slot] = keep(p, k, r, seed, out, args, fresh);
  }

  // After the loop: a keyed subset of the reservoir, audit_permille of the rounds offered
  // (rounded up), saved and recorded; the rest let go.
  void judge_kept(const Pair& p, int k) {
    size_t want = size_t((offered_ * int64_t(p.audit_permille) + 999) / 1000);
    want = std::min(want, kept_.size());
    for (size_t i = 0; i < want; i++) {  // a keyed partial shuffle
      size_t j = i + size_t(prf("pick:" + std::to_string(k) + ":" + std::to_string(i)) % (kept_.size() - i));
      std::swap(kept_[i], kept_[j]);
      audits_ += (audits_.empty() ? "" : ",") + audit_record(kept_[i]);
    }
    kept_.clear();
    offered_ = 0;
  }

  void timing(int k) {
    const Pair& p = g_sw.pairs[k];
    frame("{\"kind\":\"mark\",\"name\":\"timing_start\",\"shape\":" + std::to_string(k) + "}");
    Arm arms[2];
    arms[0].fn = baseline_;
    arms[1].fn = candidate_;
    vault_.clear_pair();
    vault_.clear_let_go();
    audits_.clear();
    kept_.clear();
    offered_ = 0;
    clear_ops();
    fresh_round_ = false;
    std::string notes = "[", timer = impl_ ? "cuda_event" : "perf_counter", error;
    double idle_excess = 0;
    long r = 0;
    uint64_t order_state = prf("order:" + std::to_string(k));
    std::string input_mode;
    // Wall seconds of each phase of the shape: where the time held alone goes.
    double at[6] = {now_s(), 0, 0, 0, 0, 0};
    try {
      input_mode = choose_inputs(p, k);
      at[1] = now_s();
#ifdef AKA_SEAL_CUDA
      if (impl_) setup_cuda(p, arms, k, r, notes, timer);
#endif
      at[2] = now_s();
      std::vector<double> warm;
      for (int w = 0; w < std::max(p.warmup, 1); w++, r++)
        for (int a = 0; a < 2; a++) warm.push_back(sample(arms, a, p, k, r, kNone).first);
      if (impl_) idle_excess = calibrate_host();
      double t0 = now_s();
      at[3] = t0;
      long next_check = p.min_samples;
      std::string reason = "max_samples";
      int block_pos = 0;
      bool ab_first = true;
      while (true) {
        if (block_pos == 0) ab_first = splitmix(order_state) & 1;
        bool ab = block_pos == 0 ? ab_first : !ab_first;
        block_pos ^= 1;
        fresh_round_ = !pool_.empty() &&
                       prf("fresh:" + std::to_string(k) + ":" + std::to_string(r)) % kFreshEvery == 0;
        // (a baseline timed in its timer has no candidate code beside it to watch for)
        bool watched = kSentry && !timer_.on() &&
                       prf("watch:" + std::to_string(k) + ":" + std::to_string(r)) % kWatchEvery == 0;
        for (int j = 0; j < 2; j++) {
          int a = ab ? j : 1 - j;
          auto w = sample(arms, a, p, k, r, kOffer, watched);
          if (!watched) vault_.push(a, w.first, w.second);
        }
        if (watched) {  // the candidate's call is still offered to the audits
          fresh_round_ = false;
          r++;
          continue;
        }
        long n = long(vault_.end_round(fresh_round_ ? 1 : 0));
        fresh_round_ = false;
        r++;
        double elapsed = now_s() - t0;
        if (n < next_check && elapsed < p.max_time && n < p.max_samples) continue;
        if (n >= p.max_samples) { reason = "max_samples"; break; }
        if (n >= p.min_samples) {
          if (std::max(rel_half(vault_.samples(0)), rel_half(vault_.samples(1))) <= p.rel_ci) {
            reason = "converged";
            break;
          }
          if (elapsed >= p.max_time) { reason = "time_budget"; break; }
        }
        next_check = n + std::max(1L, n / 16);
      }
      at[4] = now_s();
      judge_kept(p, k);
      // The last call of the candidate is always checked too (the rest at random).
      auto last = sample(arms, 1, p, k, r, kNow);
      (void)last;
      r++;
      at[5] = now_s();
      frame("{\"kind\":\"mark\",\"name\":\"timing_end\",\"shape\":" + std::to_string(k) + "}");
      frame("{\"kind\":\"timing\",\"shape\":" + std::to_string(k) + ",\"windows\":[" +
            jlist(vault_.samples(0)) + "," + jlist(vault_.samples(1)) + "],\"hosts\":[" +
            jlist(vault_.samples(2)) + "," + jlist(vault_.samples(3)) + "],\"timer\":" + jstr(timer) +
            ",\"rounds\":" + std::to_string(vault_.rounds()) + ",\"stop\":" + jstr(reason) +
            ",\"idle_excess_s\":" + jnum(idle_excess) + ",\"flush_bytes\":" +
            std::to_string(flush_.defined() ? flush_bytes_ : 0) + ",\"pre_spin_s\":" +
            jnum(spin_cycles_ ? p.spin_s : 0.0) + ",\"inputs\":" + jstr(input_mode) +
            ",\"notes\":" + notes + "],\"audits\":[" +
            audits_ + "],\"ops\":" + ops_seen() + ",\"baseline_ops\":" + names_json(vault_.let_go()) +
            (pool_.empty() ? "" : ",\"fresh\":" + tags()) + ",\"phases_s\":{\"inputs\":" +
            jnum(at[1] - at[0]) + ",\"setup\":" + jnum(at[2] - at[1]) + ",\"warm_up\":" +
            jnum(at[3] - at[2]) + ",\"sampling\":" + jnum(at[4] - at[3]) + ",\"audits\":" +
            jnum(at[5] - at[4]) + "},\"error\":null}");
    } catch (py::error_already_set& e) {
      error = short_error(e);
    } catch (std::exception& e) {
      error = e.what();
    }
    if (!error.empty()) {
      frame("{\"kind\":\"mark\",\"name\":\"timing_end\",\"shape\":" + std::to_string(k) + "}");
      frame("{\"kind\":\"timing\",\"shape\":" + std::to_string(k) + ",\"error\":" + jstr(error) +
            ",\"audits\":[" + audits_ + "],\"ops\":" + ops_seen() + "}");
    }
    pool_.clear();
#ifdef AKA_SEAL_CUDA
    flush_ = at::Tensor();
#endif
  }

  std::string tags() {
    std::string out = "[";
    std::vector<int> t = vault_.tags();
    for (size_t i = 0; i < t.size(); i++) out += (i ? "," : "") + std::to_string(t[i]);
    return out + "]";
  }

  double calibrate_host() {
    std::vector<double> ex;
    for (int i = 0; i < 15; i++) {
      auto w = window([] {});
      ex.push_back(w.second - w.first);
    }
    return median(ex);
  }

#ifdef AKA_SEAL_CUDA
  void setup_cuda(const Pair& p, Arm* arms, int k, long& r, std::string& notes,
                  std::string& timer) {
    NoPython np;
    int l2 = 0;
    if (cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, dev_.index()) != cudaSuccess) l2 = 0;
    flush_bytes_ = p.flush_factor > 0 ? int64_t(p.flush_factor * double(l2 > 0 ? l2 : 64 << 20)) : 0;
    if (flush_bytes_ > 0)
      flush_ = at::empty({flush_bytes_ / 4}, at::TensorOptions().dtype(at::kInt).device(dev_));
    if (p.spin_s > 0) {  // cycles for spin_s of busy-wait at the warmed-up clock
      std::vector<double> rates;
      c10::Stream s = impl_->getStream(dev_);
      for (int i = 0; i < 3; i++) {
        impl_->record(&ev_[0], s, dev_.index(), c10::EventFlag::BACKEND_DEFAULT);
        at::cuda::sleep(200000);
        impl_->record(&ev_[1], s, dev_.index(), c10::EventFlag::BACKEND_DEFAULT);
        sync();
        rates.push_back(200000 / std::max(impl_->elapsedTime(ev_[0], ev_[1], dev_.index()) / 1e3, 1e-9));
      }
      spin_cycles_ = int64_t(median(rates) * p.spin_s);
    }
    std::vector<double> warm[2];
    for (int w = 0; w < std::max(p.warmup, 1); w++, r++)
      for (int a = 0; a < 2; a++) warm[a].push_back(sample(arms, a, p, k, r, kNone).first);
    bool want = p.graph == 1 || (p.graph == 2 && std::min(median(warm[0]), median(warm[1])) < p.graph_below);
    if (!want) return;
    try {
      for (int a = 0; a < 2; a++) {
        auto [args, fresh] = inputs(a, p.shape, p.dtype, arm_seed("graph", p, k, r, a));
        c10::cuda::CUDAStream side = c10::cuda::getStreamFromPool(false, dev_.index());
        {
          c10::cuda::CUDAStreamGuard g(side);
          call_arm(a, arms[a].fn, args, p.shape);  // allocator and handles settle outside capture
        }
        sync();
        auto graph = std::make_unique<at::cuda::CUDAGraph>();
        {
          c10::cuda::CUDAStreamGuard g(side);
          graph->capture_begin();
          try {
            arms[a].out = call_arm(a, arms[a].fn, args, p.shape);
          } catch (...) {
            graph->capture_end();
            throw;
          }
          graph->capture_end();
        }
        sync();
        arms[a].fresh_keep.insert(arms[a].fresh_keep.begin(), fresh);
        arms[a].graph = std::move(graph);
      }
      r++;
      timer = "cuda_graph";
    } catch (py::error_already_set& e) {
      for (int a = 0; a < 2; a++) arms[a].graph.reset();
      sync();
      notes += jstr(std::string("graph capture failed, timed eagerly: ") + short_error(e));
    } catch (std::exception& e) {
      for (int a = 0; a < 2; a++) arms[a].graph.reset();
      sync();
      notes += jstr(std::string("graph capture failed, timed eagerly: ") + e.what());
    }
  }
#endif
};

}  // namespace

// The keyed digest of an output file's bytes (the checker recomputes it; trusted code only).
std::string digest_bytes(const std::string& key, const at::Tensor& bytes) {
  uint8_t d[32];
  hmac_sha256(key, "aka-seal-output-digest", d);
  uint64_t k;
  std::memcpy(&k, d, 8);
  k = k % (kP - 2) + 2;
  at::Tensor b = bytes.contiguous();
  char out[24];
  snprintf(out, sizeof out, "%016llx",
           (unsigned long long)poly_hash(static_cast<const uint8_t*>(b.data_ptr()),
                                         size_t(b.numel()) * b.element_size(), k));
  return out;
}

// Which held namespaces (``aka.eval._libstate``: (where, a dict or a class, names, values)
// each) hold anything else now. Read through borrowed references only: the entries and
// what they hold were taken in the warm parent, and a reference count written from here
// would copy every page of them into this process (four times slower than the look-ups).
py::list moved_bindings(const py::list& entries) {
  py::list out;
  for (Py_ssize_t i = 0, n = PyList_GET_SIZE(entries.ptr()); i < n; ++i) {
    PyObject* e = PyList_GET_ITEM(entries.ptr(), i);
    if (!PyTuple_Check(e) || PyTuple_GET_SIZE(e) != 4) continue;
    PyObject* ns = PyTuple_GET_ITEM(e, 1);
    PyObject* d = PyDict_Check(ns) ? ns
                  : PyType_Check(ns) ? reinterpret_cast<PyTypeObject*>(ns)->tp_dict
                                     : nullptr;
    PyObject* names = PyTuple_GET_ITEM(e, 2);
    PyObject* values = PyTuple_GET_ITEM(e, 3);
    if (d == nullptr || !PyDict_Check(d) || !PyTuple_Check(names) || !PyTuple_Check(values) ||
        PyTuple_GET_SIZE(names) != PyTuple_GET_SIZE(values))
      continue;
    for (Py_ssize_t j = 0, k = PyTuple_GET_SIZE(names); j < k; ++j) {
      PyObject* now = PyDict_GetItemWithError(d, PyTuple_GET_ITEM(names, j));
      if (now == nullptr) PyErr_Clear();
      if (now != PyTuple_GET_ITEM(values, j)) {
        out.append(i);
        break;
      }
    }
  }
  return out;
}

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {
  m.def("moved_bindings", &moved_bindings);
  m.def("digest", [](py::bytes key, const at::Tensor& bytes) {
    std::string k(key);
    py::gil_scoped_release nogil;
    return digest_bytes(k, bytes);
  });
  m.def("hook_launches", [](py::object code) {
    if (!PyCode_Check(code.ptr())) throw std::runtime_error("seal: the launch hook is a code object");
    if (g_hook_code == code.ptr()) return;
    if (g_hook_code) throw std::runtime_error("seal: the launch hook is given once");
    g_hook_code = code.release().ptr();  // held for the process's life
  });
  m.def("launched", []() {
    PyFrameObject* f = PyEval_GetFrame();  // borrowed: the frame that called this
    PyCodeObject* code = f ? PyFrame_GetCode(f) : nullptr;
    bool hook = code && reinterpret_cast<PyObject*>(code) == g_hook_code;
    if (!hook && g_forged_launch.empty())
      g_forged_launch = "the launch counter was called from " +
                        (code ? code_where(code) : std::string("no Python frame")) +
                        ", not from Triton's launch";
    Py_XDECREF(code);
    if (hook && g_sw.mode.load(std::memory_order_relaxed) == 1) g_launched = true;
  });
  m.attr("VAULT_FAULT") = AKA_VAULT_FAULT;
  m.def("confine_others", &confine_others);
  m.def("no_new_threads", &no_new_threads);
  m.def("chacha20", &drawer::chacha20_test);
  py::class_<Seal>(m, "Seal")
      .def(py::init<int, int, int, std::string, py::object, py::object, bool>(),
           py::arg("secret_fd"), py::arg("result_fd"), py::arg("out_dir_fd"), py::arg("device"),
           py::arg("make_inputs"), py::arg("baseline"), py::arg("pass_shape"))
      .def("send_py", &Seal::send_py)
      .def("forget_on_fork", &Seal::forget_on_fork)
      .def("adopt_drawer", &Seal::adopt_drawer, py::arg("draws"), py::arg("timer") = py::none(),
           py::arg("channel") = "d")
      .def("serve_draws", &Seal::serve_draws, py::arg("make_inputs"), py::arg("rfd"), py::arg("wfd"),
           py::arg("channel") = "d")
      .def("serve_baseline", &Seal::serve_baseline, py::arg("rfd"), py::arg("wfd"))
      .def("stop_drawer", &Seal::stop_drawer_after_plan)
      .def("run", &Seal::run, py::arg("candidate"), py::arg("between") = py::none());
#ifdef AKA_SEAL_CUDA
  m.attr("cuda") = true;
#else
  m.attr("cuda") = false;
#endif
}
