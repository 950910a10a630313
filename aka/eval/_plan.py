"""The evaluator's plan for one candidate process, and what it demands back.

The parent, not the candidate process, decides every call: each correctness case (shape,
dtype, seed) runs twice over differently poisoned freed memory, each call under a random
nonce; each timed shape is one pair with its own seed. The plan travels to the sealed core
with the channel key (never to Python in that process). What comes back must cover the
plan exactly: every nonce once, in order, no other; one timing record per pair; the
core's closing frame. Anything else is ``records_incomplete`` and the candidate is not
correct, whatever the records that did arrive say.
"""

from __future__ import annotations

import hashlib
import math
import secrets
from dataclasses import dataclass, field
from typing import Any

__all__ = ["Plan", "PlannedCall", "assemble", "case_seed", "make_plan"]

# Timed candidate calls checked per thousand rounds, drawn from all rounds alike: all of
# them, so every output the reservoir holds when the pair ends is judged. At 100 a pair of
# 20 rounds judged two, plus the last call, and a kernel wrong in just over half of its
# timed calls (enough to move the median) went unseen about one pair in eight...
AUDIT_PERMILLE = 1000
AUDIT_MAX = 8  # ...at most this many per timed shape, plus the last call (each costs the
# checker a reference); the core keeps a reservoir of this many outputs while it times
# ...and no more random ones than fit in this many output bytes per shape: an audit copies
# its output off the device, to a file and through the checker (256 MiB outputs: two).
AUDIT_BYTES = 512 << 20
# ...which large outputs no longer reach: past this many elements an audit is a keyed
# sample of this many (checked against the same elements of the reference), so an
# output of any size gets its AUDIT_MAX audits.
AUDIT_SAMPLE = 1 << 20
# Fresh inputs for every timed call unless one generation costs more than this; then a
# keyed pick from eight fresh sets per call (so slow generation does not starve sampling).
FRESH_MAX_S = 0.0005

# Bytes freed memory is filled with before a checked call (0xFF makes float NaN, 0x7F
# large finite values); a case's two calls get two different ones.
POISONS = [0x5A, 0xA5, 0xFF, 0x7F, 0xC3]
_random = secrets.SystemRandom()


@dataclass(frozen=True)
class PlannedCall:
    """One correctness call: ``twin`` is the index of the call on the same inputs."""

    nonce: str
    shape: int
    dtype: str
    seed: int
    poison: int
    twin: int


@dataclass(frozen=True)
class Plan:
    """Every call and pair of one candidate process, as values and as the core's text."""

    shapes: list[dict[str, int]]
    dtypes: list[str]
    calls: list[PlannedCall]
    pairs: list[tuple[int, str, int]]  # (shape index, dtype, seed)
    timing: dict[str, Any] = field(default_factory=dict)

    def text(
        self,
        task_files: tuple[str, ...] = (),
        libraries: tuple[str, ...] = (),
        forbidden: tuple[str, ...] = (),
        editable: tuple[str, ...] = (),
        allowed: tuple[str, ...] = (),
    ) -> str:
        """The plan as the core reads it (see ``_seal/seal.cpp``).

        ``forbidden``: the ATen operators whose calls inside a candidate call are recorded,
        checked and timed calls alike; each is charged to the candidate unless the code that
        called it is in ``task_files`` (the task's own sources around the kernel, not
        editable), which makes it a site the parent weighs (:mod:`aka.eval._sites`), and no
        frame of the ``editable`` files is on the stack; ``libraries``: folders whose frames
        are passed over when deciding; ``allowed``: when given, every operator but these is
        recorded and charged the same way (``operators: plumbing``).
        """
        lines = [f"T {path}" for path in task_files]
        lines += [f"E {path}" for path in editable]
        lines += [f"L {lib}" for lib in libraries]
        lines += [f"F {op}" for op in sorted(forbidden)]
        lines += [f"A {op}" for op in sorted(allowed)]
        lines += [
            f"S {i} " + " ".join(f"{k}={int(v)}" for k, v in shape.items())
            for i, shape in enumerate(self.shapes)
        ]
        lines += [f"D {i} {d}" for i, d in enumerate(self.dtypes)]
        lines += [
            f"C {c.nonce} {c.shape} {self.dtypes.index(c.dtype)} {c.seed} {c.poison}"
            for c in self.calls
        ]
        t = self.timing
        graph = {None: 2, True: 1, False: 0}[t.get("use_cuda_graph")]
        for shape, dtype, seed in self.pairs:
            lines.append(
                f"P {shape} {self.dtypes.index(dtype)} {seed} {t['target_rel_ci']} "
                f"{t['max_time_s']} {t['min_samples']} {t.get('max_samples', 5000)} "
                f"{t.get('warmup', 5)} {graph} {AUDIT_PERMILLE} {t.get('pre_spin_s', 20e-6)} "
                f"{t.get('graph_below_s', 100e-6)} {t.get('flush_factor', 2.0)} {AUDIT_MAX} "
                f"{t.get('fresh_max_s', FRESH_MAX_S)} {AUDIT_BYTES} {AUDIT_SAMPLE}"
            )
        return "\n".join(lines) + "\n"


def case_seed(seed: int, *where: object) -> int:
    """The seed of one case's inputs: a hash of the evaluation's seed and the case, 31 bits
    (what every task's ``make_inputs`` takes). Never a step from the evaluation's seed: a
    candidate that learns the seed of one case's inputs (a task that leaves torch's global
    generator seeded) would otherwise know every other case's. Timed rounds are keyed in
    the sealed core itself (``draw_seed`` in ``_seal/seal.cpp``)."""
    text = ":".join(map(str, (seed, *where))).encode()
    return int.from_bytes(hashlib.blake2b(text, digest_size=8).digest(), "little") & 0x7FFF_FFFF


def make_plan(
    shapes: list[dict[str, int]],
    dtypes: list[str],
    *,
    seed: int,
    seeds: int,
    time: bool,
    timing: dict[str, Any],
    stages: tuple[str, ...] = ("correctness", "timing"),
) -> Plan:
    """Every shape x dtype with the first seed, the further seeds on the smallest shape.

    Each case is two calls on the same inputs over different poison bytes (an output
    that depends on leftover memory differs between them). Timing pairs: every shape,
    the first dtype, when ``time``.
    """
    small = min(range(len(shapes)), key=lambda i: math.prod(shapes[i].values()))
    calls: list[PlannedCall] = []
    if "correctness" in stages:
        for i in range(len(shapes)):
            for dtype in dtypes:
                for k in range(seeds if i == small else 1):
                    s = case_seed(seed, "case", i, dtype, k)
                    first = len(calls)
                    # Two different bytes: equal poison would leave equal leftovers.
                    poisons = _random.sample(POISONS, 2)
                    for j in range(2):
                        calls.append(
                            PlannedCall(
                                nonce=secrets.token_hex(8),
                                shape=i,
                                dtype=dtype,
                                seed=s,
                                poison=poisons[j],
                                twin=first + 1 - j,
                            )
                        )
    pairs = []
    if time and "timing" in stages:
        pairs = [(i, dtypes[0], case_seed(seed, "pair", i)) for i in range(len(shapes))]
    return Plan(shapes, list(dtypes), calls, pairs, dict(timing))


OUTPUT_FIELDS = ("file", "digest", "nbytes", "out_dtype", "out_shape", "out_contiguous")
"""What the core says of a saved output (``save`` in ``_seal/seal.cpp``)."""


def _record(plan: Plan, call: PlannedCall, frame: dict[str, Any]) -> dict[str, Any]:
    return {
        "kind": "case",
        "shape": plan.shapes[call.shape],
        "dtype": call.dtype,
        "seed": call.seed,
        **{k: frame.get(k) for k in OUTPUT_FIELDS},
        **({"error": frame["error"]} if frame.get("error") else {}),
    }


def _audits_short(frame: dict[str, Any]) -> str:
    """What is wrong with a timing frame's audits, or ``""``.

    The core keeps a reservoir of the timed calls' outputs and saves a keyed subset when
    the pair ends; the subset lives in memory candidate code can reach through a raw
    address, the round count in the vault it cannot. So the count is checked here: every
    round offered, the reservoir holds ``min(rounds, size)`` (its size is at least
    :data:`AUDIT_MAX` capped by what :data:`AUDIT_BYTES` holds of sampled outputs), the
    plan's :data:`AUDIT_PERMILLE` of the rounds are saved from it, and the last call is
    always saved; each audit a round of its own. Fewer, or a round twice, is an audit
    dropped or copied over one that would have failed.
    """
    if frame.get("error"):
        return ""
    rounds = int(frame.get("rounds") or len((frame.get("windows") or [[]])[0]))
    floor = min(AUDIT_MAX, AUDIT_BYTES // (8 * AUDIT_SAMPLE)) if AUDIT_SAMPLE > 0 else 0
    want = min(-(-rounds * AUDIT_PERMILLE // 1000), rounds, max(floor, 0)) + 1
    audits = [a for a in frame.get("audits") or [] if isinstance(a, dict)]
    seen = [a.get("round") for a in audits]
    if len(audits) < want:
        return f"{len(audits)} timed audits came back for {rounds} rounds, {want} at least"
    if len(set(seen)) != len(seen):
        return "a timed round was audited twice"
    return ""


def assemble(plan: Plan, core: list[dict[str, Any]]) -> dict[str, Any]:
    """Records for the checker, raw timings and sealed findings from the core's frames.

    Returns ``records`` (correctness cases, then timed audits), ``twins`` (record index
    pairs), ``timing`` (per pair: shape, dtype, the core's timing frame), ``ops`` (forbidden
    operators seen in candidate calls, checked or timed), ``code`` (files the core saw
    mapped executable after it started), ``flags``, ``notes``, ``threads`` (what the sentry
    saw of threads started after the core, judged by :func:`thread_flags`) and ``error``.
    """
    flags: list[dict[str, str]] = []
    calls = [f for f in core if f.get("kind") == "call"]
    timings = [f for f in core if f.get("kind") == "timing"]
    done = [f for f in core if f.get("kind") == "core_done"]
    code: list[dict[str, Any]] = []
    notes: list[str] = []
    threads: list[str] = []
    for f in done:
        if f.get("recorder"):
            flags.append({"flag": "op_record_tamper", "evidence": str(f["recorder"])})
        counted = f.get("unlaunched")
        if isinstance(counted, list) and len(counted) == 2 and counted[0]:
            flags.append({"flag": "no_kernel_launch", "evidence": f"{counted[0]} of {counted[1]} "
                          "calls of the plan launched no Triton kernel (the core)"})  # fmt: skip
        if f.get("forged_launch"):
            flags.append({"flag": "no_kernel_launch", "evidence": str(f["forged_launch"])})
        if f.get("process"):
            flags.append({"flag": "background_process", "evidence": f"{f['process']} (the core)"})
        code += [c for c in f.get("code") or [] if isinstance(c, dict)]
        outside = f.get("outside")
        if isinstance(outside, dict) and outside.get("seen"):
            flags.append({"flag": "outside_call", "evidence": f"{outside['seen']} (the sentry)"})
        if isinstance(outside, dict) and outside.get("made"):
            flags.append({"flag": "dynamic_code", "evidence": f"{outside['made']} (the sentry)"})
        if isinstance(outside, dict) and outside.get("thread"):
            threads.append(str(outside["thread"]))
        if isinstance(outside, dict) and outside.get("unavailable"):
            notes.append(
                f"no sentry for candidate code outside its calls: {outside['unavailable']}"
            )
    by_nonce: dict[str, dict[str, Any]] = {}
    for f in calls:
        nonce = str(f.get("nonce"))
        if nonce in by_nonce:
            flags.append(
                {"flag": "records_incomplete", "evidence": f"call {nonce} came back twice"}
            )
        by_nonce[nonce] = f
    planned = {c.nonce for c in plan.calls}
    stray = sorted(set(by_nonce) - planned)
    if stray:
        flags.append({"flag": "records_incomplete",
                      "evidence": f"{len(stray)} record(s) for calls never asked for"})  # fmt: skip
    records: list[dict[str, Any]] = []
    ops: set[str] = set()
    error: str | None = None
    for call in plan.calls:
        frame = by_nonce.get(call.nonce)
        if frame is None:
            records.append({"kind": "case", "shape": plan.shapes[call.shape], "dtype": call.dtype,
                            "seed": call.seed, "error": "no record came back for this call"})  # fmt: skip
            continue
        records.append(_record(plan, call, frame))
        ops.update(str(o) for o in frame.get("ops") or [])
        if frame.get("mutated"):
            flags.append({"flag": "input_mutation", "evidence":
                          f"shape {plan.shapes[call.shape]} {call.dtype}: inputs changed"})  # fmt: skip
        if frame.get("plain") is False:
            flags.append({"flag": "non_plain_output", "evidence": str(frame.get("error"))})
    missing = [c for c in plan.calls if c.nonce not in by_nonce]
    failed_call = any(r.get("error") for r in records)
    if missing and not failed_call and not done:
        flags.append({"flag": "records_incomplete",
                      "evidence": f"{len(missing)} of {len(plan.calls)} planned calls missing"})  # fmt: skip
    timing: list[dict[str, Any]] = []
    if plan.pairs and not failed_call:
        got: dict[int, dict[str, Any]] = {}
        for f in timings:  # one per pair: a second (signed or not) is not the core's
            k = int(f.get("shape", -1))
            if k in got:
                flags.append({"flag": "result_channel_tamper",
                              "evidence": f"two timing records for shape {k}"})  # fmt: skip
            got.setdefault(k, f)
        for k, (shape, dtype, _seed) in enumerate(plan.pairs):
            tf = got.get(k)
            if tf is None:
                if done:
                    error = error or (done[-1].get("error") or "a timing record is missing")
                    flags.append({"flag": "records_incomplete",
                                  "evidence": f"no timing record for shape {k}"})  # fmt: skip
                continue
            ops.update(str(o) for o in tf.get("ops") or [])
            if tf.get("error"):
                error = error or f"timing failed: {tf['error']}"
            short = _audits_short(tf)
            if short:
                flags.append({"flag": "records_incomplete",
                              "evidence": f"shape {plan.shapes[shape]}: {short}"})  # fmt: skip
            for audit in tf.get("audits") or []:
                records.append({"kind": "timed", "shape": plan.shapes[shape], "dtype": dtype,
                                "seed": audit.get("seed"),
                                **{k2: audit.get(k2) for k2 in
                                   OUTPUT_FIELDS},
                                **({"sampled": audit["sampled"]} if "sampled" in audit else {}),
                                **({"error": audit["error"]} if audit.get("error") else {})})  # fmt: skip
                if audit.get("mutated"):
                    flags.append({"flag": "input_mutation",
                                  "evidence": f"timed call on shape {plan.shapes[shape]}"})  # fmt: skip
            if not tf.get("error"):
                timing.append({"shape": plan.shapes[shape], "dtype": dtype, "raw": tf})
    if not done and not error:
        error = "the evaluation process ended before its plan was done"
    twins = [(i, c.twin) for i, c in enumerate(plan.calls) if i < c.twin]
    return {"records": records, "twins": twins, "timing": timing, "ops": sorted(ops),
            "code": code, "flags": flags, "notes": notes, "threads": threads,
            "error": error}  # fmt: skip


def thread_flags(threads: list[str], native: bool) -> tuple[list[dict[str, str]], list[str]]:
    """``(flags, notes)`` for threads started after the evaluation's core and alive while the
    reference drew inputs, a baseline ran or between calls (the sentry).

    A thread of C callables runs no frame of the candidate's and can still read what is
    drawn (``sys._current_frames``, numpy over the tensors' memory) while torch's operators
    let the interpreter's lock go. Where the task's candidates compute in a kernel language
    (``native`` false: Triton) nothing they use starts a thread, so such a thread is
    ``background_thread``; where they may build native code (torch's compiler keeps threads
    of its own) it is a note.
    """
    if not threads:
        return [], []
    if native:
        return [], [f"{t} (the sentry; not judged for this backend)" for t in threads]
    return [{"flag": "background_thread", "evidence": f"{t} (the sentry)"} for t in threads], []
