"""The evaluation child process: the only place candidate code is imported.

Run as ``python -I -m aka.eval._child RESULT_FD`` with a JSON request on stdin. It loads
the task's reference, the baseline and the candidate from a fresh directory the parent
built from digests, checks compile, correctness and timing, and writes one JSON result
to ``RESULT_FD`` (a pipe the parent created; nothing the candidate writes to files or
stdout is read as a result). ``-I`` keeps the working directory and user site off
``sys.path``, and torch is imported before any candidate directory is added, so a
``torch.py`` beside the kernel cannot shadow it.
"""

from __future__ import annotations

import importlib.util
import json
import math
import os
import sys
import time
import traceback
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

MAX_ERROR_CHARS = 4000


def _short_error(exc: BaseException) -> str:
    text = "".join(traceback.format_exception_only(type(exc), exc)).strip()
    tb = traceback.extract_tb(exc.__traceback__)
    where = next(
        (f"{f.filename}:{f.lineno}" for f in reversed(tb) if "aka/eval" not in f.filename), ""
    )
    return (f"{text} (at {where})" if where else text)[:MAX_ERROR_CHARS]


def _load_module(path: Path, name: str) -> ModuleType:
    """Import ``path`` as module ``name`` with its own folder importable during import."""
    folder = str(path.parent)
    sys.path.insert(0, folder)
    try:
        spec = importlib.util.spec_from_file_location(name, path)
        if spec is None or spec.loader is None:
            raise ImportError(f"cannot import {path}")
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
        return module
    finally:
        sys.path.remove(folder)


def _entry(folder: Path, entry_file: str, symbol: str, name: str) -> Callable[..., Any]:
    module = _load_module(folder / entry_file, name)
    fn = getattr(module, symbol, None)
    if not callable(fn):
        raise AttributeError(f"{entry_file} defines no callable {symbol!r}")
    return fn  # type: ignore[no-any-return]


class _Harness:
    """Holds the loaded modules and the request; one method per stage."""

    def __init__(self, req: dict[str, Any]):
        import torch

        self.torch = torch
        self.req = req
        self.device = req["device"]
        self.ref = _load_module(Path(req["task_dir"]) / req["reference"], "aka_reference")
        self.baseline = _entry(
            Path(req["base_dir"]), req["entry_file"], req["entry_symbol"], "aka_baseline"
        )
        self.candidate: Callable[..., Any] | None = None

    def dtype(self, name: str) -> Any:
        return getattr(self.torch, name)

    def inputs(self, shape: dict[str, int], dtype: str, seed: int) -> tuple[Any, ...]:
        return tuple(self.ref.make_inputs(shape, self.dtype(dtype), self.device, seed))

    def call(self, fn: Callable[..., Any], args: tuple[Any, ...], shape: dict[str, int]) -> Any:
        return fn(*args, **shape) if self.req["pass_shape"] else fn(*args)

    def sync(self) -> None:
        if self.device.startswith("cuda"):
            self.torch.cuda.synchronize()

    def compile(self) -> dict[str, Any]:
        t0 = time.perf_counter()
        try:
            self.candidate = _entry(
                Path(self.req["cand_dir"]),
                self.req["entry_file"],
                self.req["entry_symbol"],
                "aka_candidate",
            )
            shape = self.req["shapes"][0]
            self.call(
                self.candidate, self.inputs(shape, self.req["dtypes"][0], self.req["seed"]), shape
            )
            self.sync()
            return {"ok": True, "error": None, "wall_s": time.perf_counter() - t0}
        except Exception as exc:
            return {"ok": False, "error": _short_error(exc), "wall_s": time.perf_counter() - t0}

    def check_case(self, shape: dict[str, int], dtype: str, seed: int) -> dict[str, Any]:
        torch = self.torch
        tol = self.req["tolerances"][dtype]
        case: dict[str, Any] = {"shape": shape, "dtype": dtype, "seed": seed, "ok": False}
        args = self.inputs(shape, dtype, seed)
        pristine = tuple(a.clone() if isinstance(a, torch.Tensor) else a for a in args)
        expected = self.call(self.ref.reference, pristine, shape)
        assert self.candidate is not None
        try:
            out = self.call(self.candidate, args, shape)
            self.sync()
        except Exception as exc:
            case["error"] = _short_error(exc)
            return case
        if type(out) is not torch.Tensor:
            case["error"] = f"output is {type(out).__name__}, expected a plain torch.Tensor"
            return case
        if out.layout != torch.strided or out.shape != expected.shape:
            case["error"] = f"output shape {tuple(out.shape)} != expected {tuple(expected.shape)}"
            return case
        diff = (out.double() - expected.double()).abs()
        case["max_abs_err"] = float(diff.max()) if diff.numel() else 0.0
        if not torch.isfinite(out.double()).all():
            case["error"] = "output has NaN or Inf"
            return case
        ok = torch.allclose(out.double(), expected.double(), atol=tol["atol"], rtol=tol["rtol"])
        case["ok"] = bool(ok)
        if not ok:
            case["error"] = (
                f"max abs error {case['max_abs_err']:.3g} beyond atol={tol['atol']} rtol={tol['rtol']}"
            )
        return case

    def correctness(self) -> list[dict[str, Any]]:
        cases = []
        for shape in self.req["shapes"]:
            for dtype in self.req["dtypes"]:
                for k in range(self.req["seeds"]):
                    cases.append(self.check_case(shape, dtype, self.req["seed"] + 7919 * k))
        return cases

    def n_input_sets(self, shape: dict[str, int], dtype: str) -> int:
        """Enough input sets that rotating through them exceeds twice the L2 on a GPU."""
        if not self.device.startswith("cuda"):
            return 2
        torch = self.torch
        one = sum(
            a.numel() * a.element_size()
            for a in self.inputs(shape, dtype, 0)
            if isinstance(a, torch.Tensor)
        )
        l2 = getattr(torch.cuda.get_device_properties(self.device), "L2_cache_size", 50 << 20)
        return max(2, min(16, math.ceil(2 * l2 / max(one, 1))))

    def _runner(
        self, fn: Callable[..., Any], sets: list[tuple[Any, ...]], shape: dict[str, int]
    ) -> Callable[[int], Any]:
        return lambda i: self.call(fn, sets[i], shape)

    def timing(self) -> tuple[list[dict[str, Any]], dict[str, Any]]:
        from aka.timing import TimingConfig, device_fingerprint, measure_pair

        t = self.req["timing"]
        cfg = TimingConfig(
            target_rel_ci=t["target_rel_ci"],
            max_time_s=t["max_time_s"],
            min_samples=t["min_samples"],
            seed=self.req["seed"],
        )
        dtype = self.req["dtypes"][0]
        results = []
        for shape in self.req["shapes"]:
            n = self.n_input_sets(shape, dtype)
            sets = [
                self.inputs(shape, dtype, self.req["seed"] + 104729 * (i + 1)) for i in range(n)
            ]
            cand = self.candidate
            assert cand is not None
            pair = measure_pair(
                self._runner(self.baseline, sets, shape),
                self._runner(cand, sets, shape),
                device=self.device,
                config=cfg,
                n_input_sets=n,
            )
            results.append({"shape": shape, "dtype": dtype, "pair": pair.to_dict()})
        return results, device_fingerprint(self.device)


def run(req: dict[str, Any]) -> dict[str, Any]:
    """Run every stage the request asks for and return the JSON-able result."""
    result: dict[str, Any] = {
        "compiled": None,
        "cases": [],
        "timing": [],
        "device": {},
        "error": None,
    }
    try:
        harness = _Harness(req)
    except Exception as exc:
        result["error"] = f"harness failed to load the reference or baseline: {_short_error(exc)}"
        return result
    result["compiled"] = harness.compile()
    if not result["compiled"]["ok"]:
        return result
    result["cases"] = harness.correctness()
    if req["time"] and all(c["ok"] for c in result["cases"]):
        try:
            result["timing"], result["device"] = harness.timing()
        except Exception as exc:
            result["error"] = f"timing failed: {_short_error(exc)}"
    return result


def main() -> None:
    """Read the request from stdin, write the result to the fd named in argv[1]."""
    fd = int(sys.argv[1])
    req = json.loads(sys.stdin.read())
    out = run(req)
    with os.fdopen(fd, "w") as channel:
        json.dump(out, channel)


if __name__ == "__main__":
    main()
