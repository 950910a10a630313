"""The checker process: reference outputs live here and nowhere else.

Run as ``python -I -m aka.eval._reference RESULT_FD`` with a JSON request on stdin,
*after* the candidate process has exited. For every output the candidate process
recorded, it regenerates the inputs from the seed (``make_inputs`` is deterministic),
computes the reference on those pristine inputs, and compares within the task's
tolerance for the dtype. It also asks whether a null answer (zeros, a copy of the first
input) would pass a case: if so the task cannot tell a real kernel from nothing, and
the evaluation is flagged ``degenerate_task``. Nothing here imports candidate code: the
candidate's outputs are read as plain tensors (``torch.load(weights_only=True)``).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

from aka.eval._child import _short_error, load_file_module
from aka.eval._prepare import adopt, prepare, read_request
from aka.eval._profiling import profiled
from aka.eval._sandbox import Channel


class _Checker:
    def __init__(self, req: dict[str, Any]):
        import torch

        self.torch = torch
        self.req = req
        self.device = req["device"]
        self.ref = load_file_module(Path(req["task_dir"]) / req["reference"], "aka_reference")
        self.flags: list[dict[str, str]] = []

    def expected(self, shape: dict[str, int], dtype: str, seed: int) -> tuple[Any, Any]:
        dt = getattr(self.torch, dtype)
        args = tuple(self.ref.make_inputs(shape, dt, self.device, seed))
        out = (
            self.ref.reference(*args, **shape)
            if self.req["pass_shape"]
            else self.ref.reference(*args)
        )
        return args, out

    def close(self, out: Any, ref: Any, tol: dict[str, float]) -> bool:
        return bool(
            self.torch.allclose(out.double(), ref.double(), atol=tol["atol"], rtol=tol["rtol"])
        )

    def degenerate(self, args: tuple[Any, ...], ref: Any, tol: dict[str, float], tag: str) -> None:
        torch = self.torch
        nulls = {"zeros": torch.zeros_like(ref)}
        first = next((a for a in args if isinstance(a, torch.Tensor)), None)
        if first is not None and first.shape == ref.shape:
            nulls["a copy of the first input"] = first
        for name, null in nulls.items():
            if self.close(null, ref, tol):
                item = {
                    "flag": "degenerate_task",
                    "evidence": f"{tag}: a null answer ({name}) passes; the task cannot tell",
                }
                if item not in self.flags:
                    self.flags.append(item)

    def check(self, rec: dict[str, Any]) -> dict[str, Any]:
        torch = self.torch
        shape, dtype, seed = rec["shape"], rec["dtype"], rec["seed"]
        res: dict[str, Any] = {"ok": False, "max_abs_err": None, "error": rec.get("error")}
        if "file" not in rec:
            res["error"] = res["error"] or "no output recorded"
            return res
        tol = self.req["tolerances"][dtype]
        args, ref = self.expected(shape, dtype, seed)
        tag = f"{rec['kind']} shape {shape} {dtype} seed {seed}"
        if rec["kind"] == "case":
            self.degenerate(args, ref, tol, tag)
        out = torch.load(Path(self.req["out_dir"]) / rec["file"], weights_only=True)
        if type(out) is not torch.Tensor:
            res["error"] = f"{tag}: output is {type(out).__name__}, expected a plain torch.Tensor"
            return res
        out = out.to(ref.device)
        if out.shape != ref.shape:
            res["error"] = f"{tag}: output shape {tuple(out.shape)} != expected {tuple(ref.shape)}"
            return res
        diff = (out.double() - ref.double()).abs()
        res["max_abs_err"] = float(diff.max()) if diff.numel() else 0.0
        if not bool(torch.isfinite(out.double()).all()):
            res["error"] = f"{tag}: output has NaN or Inf"
            return res
        res["ok"] = self.close(out, ref, tol)
        if not res["ok"]:
            res["error"] = (
                f"{tag}: max abs error {res['max_abs_err']:.3g} beyond "
                f"atol={tol['atol']} rtol={tol['rtol']}"
            )
        return res

    def work(self) -> list[dict[str, Any] | None]:
        """The reference's ``work(shape, dtype)`` per timed shape, if it defines one."""
        fn = getattr(self.ref, "work", None)
        out: list[dict[str, Any] | None] = []
        for shape in self.req["timed_shapes"]:
            try:
                w = fn(shape, getattr(self.torch, self.req["dtypes"][0])) if fn else None
                out.append({k: float(v) for k, v in w.items()} if w else None)
            except Exception:
                out.append(None)
        return out


def run(req: dict[str, Any]) -> dict[str, Any]:
    """Check every record; return per-record results, flags and work estimates."""
    try:
        checker = _Checker(req)
    except Exception as exc:
        return {"error": f"checker failed to load the reference: {_short_error(exc)}"}
    results = []
    for rec in req["records"]:
        try:
            results.append(checker.check(rec))
        except Exception as exc:
            results.append({"ok": False, "max_abs_err": None, "error": _short_error(exc)})
    return {"results": results, "flags": checker.flags, "work": checker.work(), "error": None}


def main() -> None:
    """Read the request from stdin, write the JSON result to the fd named in argv[1]."""
    import torch  # noqa: F401  (loaded while the candidate process runs)

    fd = int(sys.argv[1])
    prepare(sys.argv[2:], isolate=False)
    req = read_request()
    adopt(req)
    channel = Channel(fd, bytes.fromhex(req.pop("key")))
    out = profiled(req, "checker", run, req)
    channel.send({"kind": "result", **out})
    os.close(fd)


if __name__ == "__main__":
    main()
