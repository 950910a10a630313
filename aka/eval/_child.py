"""The candidate process: the only place candidate code is imported; it never sees answers.

Run as ``python -I -m aka.eval._child RESULT_FD`` with a JSON request on stdin. It loads
``make_inputs`` from the task's reference (the reference *function* is dropped), the
baseline and the candidate from a fresh directory the parent built from digests, then:

- compile: import the candidate and call it once;
- correctness cases (every shape x dtype, the further seeds on the smallest shape): each
  output is written to a file for the checker process, which alone computes reference
  outputs (after this process has exited). Around each call: inputs compared with a
  pristine copy (mutation); outputs must be plain dense tensors; a second run over
  output memory poisoned differently (NaN-filled allocations, then freed blocks of 0x5A
  bytes) must agree (uninitialized reads); on the smallest shape, inputs rewritten in
  place at the same addresses must give fresh answers (caches keyed on pointers or
  identity; every timed shape is asked again after timing); for Triton tasks the kernel launches are
  counted and a run with every launch turned into a no-op must change the output;
- timing through :func:`aka.timing.measure_pair`, the candidate on its own input sets
  (the baseline's sets are different, so its freed outputs are no use), then the last
  timed output of every set and one more call after rewriting a set in place go to the
  checker too.

Results leave over an HMAC-signed pipe (:class:`aka.eval._sandbox.Channel`); runtime
guards (:class:`aka.eval._sandbox.Guards`) turn the usual hacks into flags. ``-I`` keeps
the working directory and user site off ``sys.path``; torch is imported before any
candidate directory is added, so a ``torch.py`` beside the kernel cannot shadow it.
"""

from __future__ import annotations

import importlib.util
import math
import os
import secrets
import sys
import tempfile
import time
import traceback
import warnings
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

from aka.eval._kernels import LaunchCounter, cuda_kernel_names, own_kernels
from aka.eval._prepare import adopt, enter_network, prepare, read_request, wait_for_gate
from aka.eval._profiling import profiled
from aka.eval._sandbox import Channel, Guards

MAX_ERROR_CHARS = 4000
# The stages one process runs (compile always: the others need the imported candidate).
# The evaluator runs all three in one process; ``stages`` exists for the naive path of
# ``aka bench eval`` (a fresh interpreter per stage, as harnesses without workers do).
STAGES = ("compile", "correctness", "timing")
POISON_BYTE = 0x5A


def _short_error(exc: BaseException) -> str:
    text = "".join(traceback.format_exception_only(type(exc), exc)).strip()
    tb = traceback.extract_tb(exc.__traceback__)
    where = next(
        (f"{f.filename}:{f.lineno}" for f in reversed(tb) if "aka/eval" not in f.filename), ""
    )
    return (f"{text} (at {where})" if where else text)[:MAX_ERROR_CHARS]


def load_file_module(path: Path, name: str, *, keep: bool = True) -> ModuleType:
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
        if not keep:
            sys.modules.pop(name, None)


def _entry(module: ModuleType, entry_file: str, symbol: str) -> Callable[..., Any]:
    fn = getattr(module, symbol, None)
    if not callable(fn):
        raise AttributeError(f"{entry_file} defines no callable {symbol!r}")
    return fn


class _Harness:
    """Holds the loaded modules, the guards and the request; one method per stage."""

    def __init__(self, req: dict[str, Any], channel: Channel):
        import torch

        self.torch = torch
        self.req = req
        self.channel = channel
        self.device = req["device"]
        self.out_dir = Path(req["out_dir"])
        self.records: list[dict[str, Any]] = []
        ref = load_file_module(
            Path(req["task_dir"]) / req["reference"], f"_ref_{secrets.token_hex(4)}", keep=False
        )
        self.make_inputs = ref.make_inputs
        del ref  # the reference function is not kept in this process
        base = load_file_module(
            Path(req["base_dir"]) / req["entry_file"], f"_base_{secrets.token_hex(4)}", keep=False
        )
        self.baseline = _entry(base, req["entry_file"], req["entry_symbol"])
        self.candidate: Callable[..., Any] | None = None
        self.notes: list[str] = []
        self.launches = LaunchCounter()
        if req["backend"] == "triton":
            self.launches.install()
        import aka.timing._engine  # noqa: F401  (imported before the snapshot)

        root = Path(req["eval_root"])
        self.guards = Guards(
            Path(req["cand_dir"]),
            deny_roots=[root, self.out_dir],
            allow_roots=[Path(tempfile.gettempdir()), Path(sys.prefix), Path(sys.base_prefix)],
        )
        scanned = [m for m in sys.modules if m.startswith("aka.timing.")]
        self.guards.install(scanned)

    # -- helpers ---------------------------------------------------------------------
    def inputs(self, shape: dict[str, int], dtype: str, seed: int) -> tuple[Any, ...]:
        dt = getattr(self.torch, dtype)
        return tuple(self.make_inputs(shape, dt, self.device, seed))

    def call(self, fn: Callable[..., Any], args: tuple[Any, ...], shape: dict[str, int]) -> Any:
        return fn(*args, **shape) if self.req["pass_shape"] else fn(*args)

    def sync(self) -> None:
        if self.device.startswith("cuda"):
            self.torch.cuda.synchronize()

    def plain(self, out: Any) -> str | None:
        """Why ``out`` is not a plain dense tensor on the device, or None."""
        torch = self.torch
        if type(out) is not torch.Tensor:
            return (
                f"output is {type(out).__module__}.{type(out).__name__}, not a plain torch.Tensor"
            )
        if out.layout != torch.strided or out.is_conj() or out.is_neg():
            return f"output is not dense (layout {out.layout}, lazy conj/neg bits)"
        if out.device.type != torch.device(self.device).type:
            return f"output is on {out.device}, expected {self.device}"
        return None

    def save(self, kind: str, shape: dict[str, int], dtype: str, seed: int, out: Any) -> None:
        """Write one output for the checker; a non-tensor becomes an error record."""
        rec: dict[str, Any] = {"kind": kind, "shape": shape, "dtype": dtype, "seed": seed}
        why = self.plain(out)
        if why is not None:
            self.guards.flag("non_plain_output", f"{kind} {shape} {dtype}: {why}")
            rec["error"] = why
        else:
            prefix = self.req.get("out_prefix", "")
            path = self.out_dir / f"{prefix}{len(self.records):05d}.pt"
            self.torch.save(out.detach().cpu().contiguous(), path)
            rec["file"] = path.name
        self.records.append(rec)

    def error(self, kind: str, shape: dict[str, int], dtype: str, seed: int, msg: str) -> None:
        self.records.append(
            {"kind": kind, "shape": shape, "dtype": dtype, "seed": seed, "error": msg}
        )

    @staticmethod
    def _tensors(args: tuple[Any, ...]) -> list[Any]:
        import torch

        return [a for a in args if isinstance(a, torch.Tensor)]

    def restore(self, args: tuple[Any, ...], pristine: list[Any]) -> bool:
        """Copy pristine values back; return whether any input had changed."""
        changed = False
        for a, p in zip(self._tensors(args), pristine, strict=True):
            if not self.torch.equal(a, p):
                changed = True
                a.copy_(p)
        return changed

    # -- stages ----------------------------------------------------------------------
    def compile(self) -> dict[str, Any]:
        t0 = time.perf_counter()
        try:
            module = load_file_module(
                Path(self.req["cand_dir"]) / self.req["entry_file"], "aka_candidate"
            )
            self.candidate = _entry(module, self.req["entry_file"], self.req["entry_symbol"])
            shape = self.req["shapes"][0]
            args = self.inputs(shape, self.req["dtypes"][0], self.req["seed"] ^ 0x5EED)
            self.call(self.candidate, args, shape)
            self.sync()
            return {"ok": True, "error": None, "wall_s": time.perf_counter() - t0}
        except Exception as exc:
            return {"ok": False, "error": _short_error(exc), "wall_s": time.perf_counter() - t0}
        finally:
            self.guards.check_state("compile")

    def _poisoned_call(
        self, args: tuple[Any, ...], shape: dict[str, int], nan: bool, nbytes: int = 0
    ) -> Any:
        """One candidate call with fresh allocations poisoned (NaN fill, or 0x5A bytes)."""
        torch = self.torch
        assert self.candidate is not None
        if nan:
            torch.use_deterministic_algorithms(True, warn_only=True)
            torch.utils.deterministic.fill_uninitialized_memory = True
        try:
            if not nan:
                block = torch.full(
                    (max(nbytes, 1),), POISON_BYTE, dtype=torch.uint8, device=self.device
                )
                del block  # freed: the next allocations of that size class reuse it
            out = self.call(self.candidate, args, shape)
            self.sync()
            return out
        finally:
            if nan:
                torch.use_deterministic_algorithms(False)
                torch.utils.deterministic.fill_uninitialized_memory = False

    def check_case(
        self, shape: dict[str, int], dtype: str, seed: int, first: bool, rewrite: bool = True
    ) -> None:
        torch = self.torch
        tag = f"shape {shape} {dtype} seed {seed}"
        args = self.inputs(shape, dtype, seed)
        pristine = [a.clone() for a in self._tensors(args)]
        self.launches.launches, self.launches.counting = 0, True
        try:
            out_a = self._poisoned_call(args, shape, nan=True)
        except Exception as exc:
            self.error("case", shape, dtype, seed, _short_error(exc))
            return
        finally:
            self.launches.counting = False
        if self.req["backend"] == "triton" and self.launches.launches == 0:
            self.guards.flag("no_kernel_launch", f"{tag}: no Triton kernel launched")
        if self.restore(args, pristine):
            self.guards.flag("input_mutation", f"{tag}: the candidate changed its inputs")
        self.save("case", shape, dtype, seed, out_a)
        if self.plain(out_a) is not None:
            return
        out_a = out_a.detach().clone()
        try:
            nbytes = out_a.numel() * out_a.element_size()
            out_b = self._poisoned_call(args, shape, nan=False, nbytes=nbytes)
            self.restore(args, pristine)
            tol = self.req["tolerances"][dtype]
            same = self.plain(out_b) is None and out_b.shape == out_a.shape
            if not (
                same
                and torch.allclose(
                    out_a.double(), out_b.double(), atol=tol["atol"], rtol=tol["rtol"]
                )
            ):
                self.guards.flag(
                    "uninitialized_read", f"{tag}: two runs over differently poisoned memory differ"
                )
            if first:
                self.first_case_checks(args, pristine, shape, dtype, seed, out_a, rewrite)
        except Exception as exc:
            self.error("case", shape, dtype, seed, f"repeat run failed: {_short_error(exc)}")

    def first_case_checks(
        self,
        args: tuple[Any, ...],
        pristine: list[Any],
        shape: dict[str, int],
        dtype: str,
        seed: int,
        out_a: Any,
        rewrite: bool = True,
    ) -> None:
        """No-op'd kernels must change the output; rewritten inputs must give new answers."""
        torch = self.torch
        assert self.candidate is not None
        if self.req["backend"] == "triton" and self.launches.hooked:
            self.launches.counting, self.launches.noop = True, True
            try:
                # NaN-filled allocations: memory freed by the runs before holds the right
                # answer, and an output that reuses it must not look computed.
                out_n = self._poisoned_call(args, shape, nan=True)
                unchanged = self.plain(out_n) is None and torch.equal(out_n, out_a)
            except Exception:
                unchanged = False
            finally:
                self.launches.counting, self.launches.noop = False, False
            self.restore(args, pristine)
            if unchanged:
                self.guards.flag(
                    "kernel_not_used",
                    f"shape {shape} {dtype}: output unchanged with every Triton launch a no-op",
                )
        if self.req["backend"] == "cuda" and self.device.startswith("cuda"):
            self.cuda_kernels(args, shape, dtype)
        if not rewrite:
            return
        rseed = seed + 1_000_003
        fresh = self.inputs(shape, dtype, rseed)
        for a, f in zip(self._tensors(args), self._tensors(fresh), strict=True):
            a.copy_(f)
        out = self.call(self.candidate, args, shape)
        self.sync()
        self.save("rewrite", shape, dtype, rseed, out)

    def cuda_kernels(self, args: tuple[Any, ...], shape: dict[str, int], dtype: str) -> None:
        """CUDA tasks: at least one kernel that no library ships must run (profiler)."""
        cand = self.candidate
        assert cand is not None

        def run() -> None:
            self.call(cand, args, shape)
            self.sync()

        names = cuda_kernel_names(run)
        if isinstance(names, str):  # no evidence either way: say so, do not flag
            self.notes.append(f"CUDA kernel check skipped: {names}")
        elif not own_kernels(names):
            self.guards.flag(
                "no_kernel_launch",
                f"shape {shape} {dtype}: only library kernels ran: {sorted(names)[:4]}",
            )

    def correctness(self) -> None:
        """Every shape x dtype with the first seed; the further seeds on the smallest shape.

        Seeds ask whether the answer follows the inputs, and rewriting inputs in place
        asks whether it follows their values rather than their addresses; one shape shows
        either as well as all of them (and after timing every timed shape is asked
        again). At GPU sizes every case costs real time (inputs, two poisoned runs, the
        output handed to the checker), so the matrix is not multiplied out, and the
        smallest shape carries the repeats.
        """
        shapes = self.req["shapes"]
        small = min(range(len(shapes)), key=lambda i: math.prod(shapes[i].values()))
        for i, shape in enumerate(shapes):
            for dtype in self.req["dtypes"]:
                for k in range(self.req["seeds"] if i == small else 1):
                    seed = self.req["seed"] + 7919 * k
                    self.check_case(shape, dtype, seed, first=k == 0, rewrite=i == small)
                self.guards.check_state(f"correctness {shape} {dtype}")

    def n_input_sets(self, shape: dict[str, int], dtype: str) -> int:
        """Enough input sets that rotating through them exceeds twice the L2 on a GPU."""
        if not self.device.startswith("cuda"):
            return 2
        torch = self.torch
        one = sum(a.numel() * a.element_size() for a in self._tensors(self.inputs(shape, dtype, 0)))
        l2 = getattr(torch.cuda.get_device_properties(self.device), "L2_cache_size", 50 << 20)
        return max(2, min(16, math.ceil(2 * l2 / max(one, 1))))

    def timing(self) -> tuple[list[dict[str, Any]], dict[str, Any]]:
        from aka.timing import TimingConfig, device_fingerprint, measure_pair

        t = self.req["timing"]
        seed = self.req["seed"]
        cfg = TimingConfig(
            target_rel_ci=t["target_rel_ci"],
            max_time_s=t["max_time_s"],
            min_samples=t["min_samples"],
            seed=seed,
        )
        dtype = self.req["dtypes"][0]
        cand = self.candidate
        assert cand is not None
        results = []
        wait_for_gate(self.channel.send)
        for k, shape in enumerate(self.req["shapes"]):
            n = self.n_input_sets(shape, dtype)
            cseeds = [seed + 104729 * (i + 1) for i in range(n)]
            csets = [self.inputs(shape, dtype, s) for s in cseeds]
            bsets = [self.inputs(shape, dtype, s + 55511) for s in cseeds]
            last: dict[int, Any] = {}

            def run_cand(
                i: int, sets: list[Any] = csets, keep: dict[int, Any] = last, shp: Any = shape
            ) -> Any:
                keep[i] = self.call(cand, sets[i], shp)
                return keep[i]

            def run_base(i: int, sets: list[Any] = bsets, shp: Any = shape) -> Any:
                return self.call(self.baseline, sets[i], shp)

            self.channel.send({"kind": "mark", "name": "timing_start", "shape": k})
            pair = measure_pair(run_base, run_cand, device=self.device, config=cfg, n_input_sets=n)
            self.channel.send({"kind": "mark", "name": "timing_end", "shape": k})
            self.sync()
            self.guards.check_state(f"timing {shape}")
            results.append({"shape": shape, "dtype": dtype, "pair": pair.to_dict()})
            for i in sorted(last):
                self.save("timed", shape, dtype, cseeds[i], last[i])
            pseed = seed + 3_000_017 + k
            for a, f in zip(
                self._tensors(csets[0]),
                self._tensors(self.inputs(shape, dtype, pseed)),
                strict=True,
            ):
                a.copy_(f)
            self.save("post_timing", shape, dtype, pseed, run_cand(0))
            self.sync()
        return results, device_fingerprint(self.device)


def run(req: dict[str, Any], channel: Channel) -> dict[str, Any]:
    """Run every stage the request asks for and return the JSON-able result."""
    result: dict[str, Any] = {
        "kind": "result",
        "compiled": None,
        "records": [],
        "timing": [],
        "device": {},
        "flags": [],
        "notes": [],
        "error": None,
    }
    try:
        harness = _Harness(req, channel)
    except Exception as exc:
        result["error"] = f"harness failed to load the reference or baseline: {_short_error(exc)}"
        return result
    stages = req.get("stages") or list(STAGES)
    channel.send({"kind": "mark", "name": "loaded"})
    result["compiled"] = harness.compile()
    channel.send({"kind": "mark", "name": "compiled"})
    if result["compiled"]["ok"]:
        if "correctness" in stages:
            harness.correctness()
            channel.send({"kind": "mark", "name": "checked"})
        if "timing" in stages and req["time"] and not any(r.get("error") for r in harness.records):
            try:
                result["timing"], result["device"] = harness.timing()
            except Exception as exc:
                result["error"] = f"timing failed: {_short_error(exc)}"
    harness.guards.check_state("end")
    result["records"] = harness.records
    result["flags"] = harness.guards.flags
    result["notes"] = harness.notes
    return result


def main() -> None:
    """Read the request from stdin, write signed frames to the fd named in argv[1]."""
    fd = int(sys.argv[1])
    prepared = prepare(sys.argv[2:], isolate=True)
    req = read_request()
    adopt(req)
    channel = Channel(fd, bytes.fromhex(req.pop("key")))
    network = prepared or enter_network(req.get("isolate_network", True))
    warnings.filterwarnings("ignore")
    channel.send({"kind": "mark", "name": "started", "network": network, "pid": os.getpid()})
    out = profiled(req, "child", run, req, channel)
    out["network"] = network
    channel.send(out)
    os.close(fd)


if __name__ == "__main__":
    main()
