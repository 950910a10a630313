"""The checker process: reference outputs live here and nowhere else.

Run as ``python -I -m aka.eval._checker RESULT_FD`` with a JSON request on stdin,
*after* the candidate process has exited. A prepared checker whose stdin stays open
serves one request after another (:mod:`aka.eval._reuse`): it runs no candidate code,
so nothing a candidate did lives in it, and what one request's task code leaves behind
is undone before the next (:func:`fresh_state`). For every output the candidate process
recorded, it checks the file against the keyed digest the sealed core put in the signed
record (an output rewritten after the call is ``output_tamper``), regenerates the inputs
from the seed (``make_inputs`` is deterministic), computes the reference on those
pristine inputs, and compares within the task's tolerance for the dtype. It also asks whether a null answer (zeros, a copy of the first
input) would pass a case: if so the task cannot tell a real kernel from nothing, and
the evaluation is flagged ``degenerate_task``. Nothing here imports candidate code: the
candidate's outputs are raw bytes with the dtype and shape the core recorded.
"""

from __future__ import annotations

import contextlib
import gc
import os
import sys
import tempfile
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any

from aka.eval import _native
from aka.eval._candidate import _short_error, load_file_module
from aka.eval._libstate import resolve
from aka.eval._prepare import adopt, prepare, read_request
from aka.eval._profiling import profiled
from aka.eval._sandbox import Channel
from aka.eval._wire import CheckerReport, CheckerRequest, WireError, decode, encode_report
from aka.tolerance import effective_atol, rms

# c10's names for scalar types (the core records ``c10::toString``).
_SCALAR_TYPES: dict[str, Any] = {}


def _scalar_types() -> None:
    import torch

    _SCALAR_TYPES.update(
        {
            "Float": torch.float32,
            "Double": torch.float64,
            "Half": torch.float16,
            "BFloat16": torch.bfloat16,
            "Int": torch.int32,
            "Long": torch.int64,
            "Short": torch.int16,
            "Char": torch.int8,
            "Byte": torch.uint8,
            "Bool": torch.bool,
            "ComplexFloat": torch.complex64,
            "ComplexDouble": torch.complex128,
        }
    )


def _tag(rec: dict[str, Any]) -> str:
    return f"{rec['kind']} shape {rec['shape']} {rec['dtype']} seed {rec['seed']}"


class _Checker:
    def __init__(self, req: CheckerRequest):
        import torch

        _scalar_types()
        self.torch = torch
        self.req = req
        self.device = req.device
        self.ref = load_file_module(Path(req.task_dir) / req.reference, "aka_reference")
        self.flags: list[dict[str, str]] = []
        self.core = _native.load(req.native) if req.native else None
        self.pinned = torch.device(req.device).type == "cuda"
        self._files: dict[str, Any] = {}
        self._pending: dict[str, Future[tuple[Any, dict[str, str] | None]]] = {}
        self._pool = ThreadPoolExecutor(1, thread_name_prefix="aka-checker-read")
        self._refs: dict[tuple[Any, ...], tuple[Any, Any]] = {}
        self._rms: tuple[Any, float] = (None, 0.0)  # the last reference output and its RMS
        self._judged: dict[tuple[Any, ...], dict[str, Any]] = {}

    def output(self, rec: dict[str, Any]) -> Any:
        """The recorded output as a tensor, or an error string (missing, tampered).

        Read once into a tensor of its own (not mapped: the bytes judged are the bytes
        digested), usually already read by :meth:`prefetch` while the record before it
        was judged, and kept for the next record naming the same file (twin calls whose
        outputs were bitwise equal share one).
        """
        name = str(rec["file"])
        if name not in self._files:
            pending = self._pending.pop(name, None)
            got, flag = pending.result() if pending else self._read(rec)
            if flag is not None and flag not in self.flags:
                self.flags.append(flag)
            self._files = {name: got}
        return self._files[name]

    def prefetch(self, rec: dict[str, Any] | None) -> None:
        """Start reading and digesting ``rec``'s file in the background (one ahead)."""
        name = (rec or {}).get("file")
        if rec is None or not name or name in self._files or name in self._pending:
            return
        self._pending[str(name)] = self._pool.submit(self._read, rec)

    def _read(self, rec: dict[str, Any]) -> tuple[Any, dict[str, str] | None]:
        torch = self.torch
        tag = _tag(rec)
        path = Path(self.req.out_dir) / rec["file"]
        try:
            with open(path, "rb", buffering=0) as f:
                size = os.fstat(f.fileno()).st_size
                # Page-locked on a GPU: read without faulting fresh pages (the host
                # allocator reuses its blocks) and copied to the device at full speed.
                raw = torch.empty(size, dtype=torch.uint8, pin_memory=self.pinned)
                view, done = memoryview(raw.numpy()), 0
                while done < size and (n := f.readinto(view[done:])):
                    done += n
                raw = raw[:done]
        except OSError as exc:
            return f"{tag}: output file unreadable ({exc.strerror})", None
        if self.core is not None and rec.get("digest_key"):
            got = self.core.digest(bytes.fromhex(rec["digest_key"]), raw)
            if got != rec.get("digest") or raw.numel() != rec.get("nbytes"):
                flag = {
                    "flag": "output_tamper",
                    "evidence": f"{tag}: the output file changed after the call recorded it",
                }
                return f"{tag}: output file does not match its signed digest", flag
        dtype = getattr(torch, str(rec.get("out_dtype", "")).lower().replace("torch.", ""), None)
        if not isinstance(dtype, torch.dtype):
            dtype = _SCALAR_TYPES.get(str(rec.get("out_dtype")))
        if dtype is None:
            return f"{tag}: unknown output dtype {rec.get('out_dtype')}", None
        return raw.view(dtype).reshape(rec.get("out_shape") or []), None

    def expected(self, shape: dict[str, int], dtype: str, seed: int) -> tuple[Any, Any]:
        """The inputs and reference output of one case; the last one is kept (a case's
        twin calls follow each other)."""
        key = (tuple(sorted(shape.items())), dtype, seed)
        if key not in self._refs:
            dt = getattr(self.torch, dtype)
            args = tuple(self.ref.make_inputs(shape, dt, self.device, seed))
            out = (
                self.ref.reference(*args, **shape)
                if self.req.pass_shape
                else self.ref.reference(*args)
            )
            self._refs = {key: (args, out)}
        return self._refs[key]

    def atol(self, ref: Any, tol: dict[str, float]) -> float:
        """The case's absolute tolerance (:func:`aka.tolerance.effective_atol`), from the
        whole reference output, before any sampling."""
        if not tol.get("rms_atol") or not ref.numel():
            return effective_atol(tol, 0.0)
        if self._rms[0] is not ref:  # a case's twin calls and audits share its reference
            self._rms = (ref, rms(ref))
        return effective_atol(tol, self._rms[1])

    def close(self, out: Any, ref: Any, atol: float, rtol: float) -> bool:
        return bool(self.torch.allclose(out.double(), ref.double(), atol=atol, rtol=rtol))

    def degenerate(
        self, args: tuple[Any, ...], ref: Any, atol: float, rtol: float, tag: str
    ) -> None:
        torch = self.torch
        nulls = {"zeros": torch.zeros_like(ref)}
        first = next((a for a in args if isinstance(a, torch.Tensor)), None)
        if first is not None and first.shape == ref.shape:
            nulls["a copy of the first input"] = first
        for name, null in nulls.items():
            if self.close(null, ref, atol, rtol):
                item = {
                    "flag": "degenerate_task",
                    "evidence": f"{tag}: a null answer ({name}) passes; the task cannot tell",
                }
                if item not in self.flags:
                    self.flags.append(item)

    def check(self, rec: dict[str, Any]) -> dict[str, Any]:
        """One record's result; the same bytes for the same case are judged once."""
        key = (rec.get("file"), rec.get("digest"), rec["kind"],
               tuple(sorted(rec["shape"].items())), rec["dtype"], rec["seed"])  # fmt: skip
        if rec.get("file") and key in self._judged:
            return dict(self._judged[key])
        res = self._check(rec)
        if rec.get("file"):
            self._judged[key] = dict(res)
        return res

    def _check(self, rec: dict[str, Any]) -> dict[str, Any]:
        torch = self.torch
        shape, dtype, seed = rec["shape"], rec["dtype"], rec["seed"]
        res: dict[str, Any] = {"ok": False, "max_abs_err": None, "error": rec.get("error")}
        if not rec.get("file"):
            res["error"] = res["error"] or "no output recorded"
            return res
        tol = self.req.tolerances[dtype]
        args, ref = self.expected(shape, dtype, seed)
        atol, rtol = self.atol(ref, tol), float(tol["rtol"])
        tag = _tag(rec)
        if rec["kind"] == "case":
            self.degenerate(args, ref, atol, rtol, tag)
        out = self.output(rec)
        if isinstance(out, str):
            res["error"] = out
            return res
        out = out.to(ref.device)
        if rec.get("sampled"):
            ref, why = self.sampled(rec["sampled"], ref, tag)
            if why:
                res["error"] = why
                return res
        if out.shape != ref.shape:
            res["error"] = f"{tag}: output shape {tuple(out.shape)} != expected {tuple(ref.shape)}"
            return res
        diff = (out.double() - ref.double()).abs()
        res["max_abs_err"] = float(diff.max()) if diff.numel() else 0.0
        if not bool(torch.isfinite(out.double()).all()):
            res["error"] = f"{tag}: output has NaN or Inf"
            return res
        res["ok"] = self.close(out, ref, atol, rtol)
        if not res["ok"]:
            scaled = (
                f" (atol {tol['atol']:g} + rms_atol {tol['rms_atol']:g} x output RMS)"
                if tol.get("rms_atol")
                else ""
            )
            res["error"] = (
                f"{tag}: max abs error {res['max_abs_err']:.3g} beyond "
                f"atol={atol:.3g}{scaled} rtol={rtol:g}"
            )
        return res

    def sampled(self, spec: dict[str, Any], ref: Any, tag: str) -> tuple[Any, str | None]:
        """The reference's elements a sampled audit took of the candidate's output (see
        ``save_audit`` in ``_seal/seal.cpp``), or why they cannot be compared."""
        torch = self.torch
        if list(spec.get("shape") or []) != list(ref.shape):
            return (
                ref,
                f"{tag}: output shape {tuple(spec.get('shape') or [])} != expected {tuple(ref.shape)}",
            )
        n = ref.numel()
        idx = torch.arange(int(spec["count"]), dtype=torch.int64, device=ref.device)
        idx = torch.remainder(idx * int(spec["stride"]) + int(spec["start"]), n)
        return ref.reshape(-1).index_select(0, idx), None

    def close_pool(self) -> None:
        """Stop the reader thread (nothing is pending once every record is judged)."""
        self._pool.shutdown(wait=True, cancel_futures=True)

    def work(self) -> list[dict[str, Any] | None]:
        """The reference's ``work(shape, dtype)`` per timed shape, if it defines one."""
        fn = getattr(self.ref, "work", None)
        out: list[dict[str, Any] | None] = []
        for shape in self.req.timed_shapes:
            try:
                w = fn(shape, getattr(self.torch, self.req.dtypes[0])) if fn else None
                out.append({k: float(v) for k, v in w.items()} if w else None)
            except Exception:
                out.append(None)
        return out


def run(req: CheckerRequest) -> CheckerReport:
    """Check every record; return per-record results, flags and work estimates."""
    try:
        checker = _Checker(req)
    except Exception as exc:
        error = f"checker failed to load the reference: {_short_error(exc)}"
        return CheckerReport(results=[], flags=[], work=[], error=error)
    results = []
    try:
        for i, rec in enumerate(req.records):
            # The next file is read and digested on another thread while this one is
            # judged on the device (reading is the bulk of it at GPU sizes).
            checker.prefetch(req.records[i + 1] if i + 1 < len(req.records) else None)
            try:
                results.append(checker.check(rec))
            except Exception as exc:
                results.append({"ok": False, "max_abs_err": None, "error": _short_error(exc)})
    finally:
        checker.close_pool()
    return CheckerReport(results=results, flags=checker.flags, work=checker.work(),
                         device=fingerprint(req))  # fmt: skip


def fingerprint(req: CheckerRequest) -> dict[str, Any]:
    """The evaluation device's fingerprint when shapes were timed (``aka compare`` warns
    when two arms were timed on different cards); empty if it cannot be read."""
    if not req.timed_shapes:
        return {}
    from aka.timing import device_fingerprint

    try:
        return device_fingerprint(req.device)
    except Exception:
        return {}


def main() -> None:
    """Read requests from stdin, one line each, and write each result to the fd named in
    argv[1] under that request's key, until stdin ends."""
    import torch  # noqa: F401  (loaded while the candidate process runs)

    fd = int(sys.argv[1])
    prepare(sys.argv[2:], isolate=False)
    while line := read_request():
        req, delivery = decode(CheckerRequest, line)
        adopt(delivery)
        if delivery.key is None:
            raise WireError("the checker's request came without its channel key")
        channel = Channel(fd, bytes.fromhex(delivery.key))
        with fresh_state(req.task_dir):
            out = profiled(req.profile, "checker", run, req)
            channel.send(encode_report(out))
    os.close(fd)


_FLAGS = (
    ("torch.backends.cuda.matmul", "allow_tf32"),
    ("torch.backends.cuda.matmul", "allow_fp16_reduced_precision_reduction"),
    ("torch.backends.cuda.matmul", "allow_bf16_reduced_precision_reduction"),
    ("torch.backends.cudnn", "allow_tf32"),
    ("torch.backends.cudnn", "benchmark"),
    ("torch.backends.cudnn", "deterministic"),
    ("torch.backends.cudnn", "enabled"),
)
"""Process-wide switches that change what the library computes, restored after every
request (a reference may set them when imported)."""


@contextlib.contextmanager
def fresh_state(task_dir: str) -> Iterator[None]:
    """What one request's task code changes in the process, undone when it ends: the
    modules imported from the task's folder (the next task may have its own of the same
    name), the import path, the environment, the library switches of :data:`_FLAGS`,
    the default dtype, matmul precision, deterministic algorithms and grad mode; the device's cached memory is given back, so
    that admission reads an idle checker as holding only its context; and the working
    directory is left (the evaluation's folder is removed after it).

    A reference that changes the process in another way (replaces a library function)
    would change it for the requests after it on the same checker: task code is trusted,
    and a task folder's modules are re-imported for each request anyway."""
    import torch

    folder = Path(task_dir).resolve()
    before, path, env = set(sys.modules), list(sys.path), dict(os.environ)
    flags = [(m, a, getattr(resolve(m), a)) for m, a in _FLAGS]
    dtype, precision = torch.get_default_dtype(), torch.get_float32_matmul_precision()
    deterministic = (torch.are_deterministic_algorithms_enabled(),
                     torch.is_deterministic_algorithms_warn_only_enabled())  # fmt: skip
    grad = torch.is_grad_enabled()
    try:
        yield
    finally:
        for name in set(sys.modules) - before:
            where = getattr(sys.modules.get(name), "__file__", None)
            if name == "aka_reference" or (where and Path(where).resolve().is_relative_to(folder)):
                del sys.modules[name]
        sys.path[:] = path
        if dict(os.environ) != env:
            os.environ.clear()
            os.environ.update(env)
        for module, attr, value in flags:
            setattr(resolve(module), attr, value)
        torch.set_default_dtype(dtype)
        torch.set_float32_matmul_precision(precision)
        torch.use_deterministic_algorithms(deterministic[0], warn_only=deterministic[1])
        torch.set_grad_enabled(grad)
        gc.collect()
        if torch.cuda.is_initialized():
            torch.cuda.empty_cache()
            # the page-locked buffers outputs were read into (torch 2.5 and later)
            empty_host = getattr(torch._C, "_accelerator_emptyHostCache", None) or getattr(
                torch._C, "_host_emptyCache", None
            )
            if empty_host is not None:
                empty_host()
        os.chdir(tempfile.gettempdir())


if __name__ == "__main__":
    main()
