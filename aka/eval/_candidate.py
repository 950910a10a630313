"""The candidate process: the only place candidate code is imported; it never sees answers.

Run as ``python -I -m aka.eval._candidate RESULT_FD`` with a JSON request line on stdin,
followed on the same stdin by the channel key and the plan, which the sealed core
(:mod:`aka.eval._native`, ``_seal/seal.cpp``) reads itself: Python here never holds the
key, the plan (held-out shapes and seeds included), the records or the samples.

Order matters, and is the point of this module:

1. ``make_inputs`` from the task's reference (the reference *function* is dropped) and the
   baseline are loaded, before any candidate code exists in the process;
2. the core is created with both; it reads the key and plan and keeps them;
3. the filesystem the candidate could read is narrowed (:mod:`aka.eval._contain`): the
   task folder, the output folder, the ledger and the task suite are hidden;
4. the tripwires are installed (:class:`aka.eval._sandbox.Guards`);
5. the candidate is imported ("compile") and handed to the core, which runs every call of
   the plan (correctness calls, then every timing pair) and signs every record;
6. Python-level probes that explain failures (Triton launch counting and no-op launches,
   CUDA kernel names) run last, and their findings go out as an unsigned-by-Python note
   the core frames: tripwires, never the verdict.
"""

from __future__ import annotations

import importlib.util
import json
import os
import secrets
import sys
import tempfile
import time
import traceback
import warnings
from collections.abc import Callable, Sequence
from pathlib import Path
from types import ModuleType
from typing import Any

from aka.backends import backend
from aka.eval._gpu_compile import Launches
from aka.eval._gpu_compile import check as gpu_compile_check
from aka.eval._kernels import InputDraw, LaunchCounter, cuda_kernel_names, own_kernels
from aka.eval._libstate import (
    Bindings,
    Moved,
    bind_library,
    rebound_since,
    replaced_since,
    snapshot_library,
)
from aka.eval._prepare import adopt, enter_network, prepare, read_request
from aka.eval._profiling import profiled
from aka.eval._sandbox import Guards
from aka.eval._taskcode import changed_since, patched, snapshot
from aka.eval._warm import CACHE_KEYS
from aka.eval._wire import CandidateReport, CandidateRequest, decode, encode_report

MAX_ERROR_CHARS = 4000


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


def _probes(req: CandidateRequest, cand: Callable[..., Any], make_inputs: Any, guards: Guards,
            launches: LaunchCounter) -> list[str]:  # fmt: skip
    """Required-kernel tripwires on the request's probe shape; returns notes.

    These run after the sealed plan, in Python, so they only *explain*: a Triton task
    whose every launch can be made a no-op without changing the output, or that launched
    none, and a CUDA task whose kernels are all a library's.
    """
    import torch

    notes: list[str] = []
    shape, dtype, seed = req.probe_shape, getattr(torch, req.probe_dtype), req.probe_seed
    device = req.device

    def call(filled: bool = False) -> Any:
        """One call; ``filled``: fresh allocations NaN-filled, so an output that reuses
        freed memory holding the right answer does not look computed."""
        args = tuple(make_inputs(shape, dtype, device, seed))
        if filled:
            torch.use_deterministic_algorithms(True, warn_only=True)
            torch.utils.deterministic.fill_uninitialized_memory = True  # type: ignore[attr-defined]
        try:
            out = cand(*args, **shape) if req.pass_shape else cand(*args)
            if device.startswith("cuda"):
                torch.cuda.synchronize()
        finally:
            if filled:
                torch.use_deterministic_algorithms(False)
        return out

    row = backend(req.backend)
    if row.counts_launches and launches.hooked:
        launches.launches, launches.counting = 0, True
        try:
            ref = call()
        finally:
            launches.counting = False
        if launches.launches == 0:
            guards.flag("no_kernel_launch", f"shape {shape}: no Triton kernel launched")
        launches.counting, launches.noop = True, True
        try:
            out = call(filled=True)
            unchanged = type(out) is torch.Tensor and torch.equal(out, ref)
        except Exception:
            unchanged = False
        finally:
            launches.counting, launches.noop = False, False
        if unchanged and launches.launches:
            guards.flag(
                "kernel_not_used", f"shape {shape}: output unchanged with every launch a no-op"
            )
    if row.lists_device_kernels and device.startswith("cuda"):
        names = cuda_kernel_names(call)
        if isinstance(names, str):
            notes.append(f"CUDA kernel check skipped: {names}")
        elif not own_kernels(names):
            guards.flag("no_kernel_launch", f"shape {shape}: only library kernels ran")
    return notes


def _task_code(req: CandidateRequest, guards: Guards, stage: str, moved: Sequence[str] = (),
               held: Sequence[ModuleType] = ()) -> None:  # fmt: skip
    """``task_code_patched`` when a task module's top-level names no longer hold what its
    file defines, or (``moved``) what they held before the candidate was imported or
    once everything had loaded (``held``: the modules the harness loaded itself;
    :mod:`aka.eval._taskcode`; a tripwire, flagged once)."""
    if any(f["flag"] == "task_code_patched" for f in guards.flags):
        return
    changed = list(dict.fromkeys([*patched(req.task_files or [], held), *moved]))
    if changed:
        guards.flag("task_code_patched", f"{stage}: {', '.join(changed[:6])} replaced")


def _library(guards: Guards, stage: str, before: dict[str, dict[str, Any]]) -> None:
    """``library_patched`` when a library function task code calls is bound to something
    else than before the candidate was imported (:mod:`aka.eval._libstate`; flagged once)."""
    if any(f["flag"] == "library_patched" for f in guards.flags):
        return
    changed = replaced_since(before)
    if changed:
        guards.flag("library_patched", f"{stage}: {', '.join(changed[:6])} replaced")


def _in_candidate(cand_dir: Path) -> Callable[[str], bool]:
    """Whether a file name is one of the candidate's files."""
    root = str(cand_dir.resolve())

    def candidate(filename: str) -> bool:
        return filename.startswith(root + os.sep) or filename.startswith(str(cand_dir) + os.sep)

    return candidate


def _rebound(guards: Guards, bindings: Bindings, cand_dir: Path, moved: Moved,
             seen: list[str] | None = None) -> None:  # fmt: skip
    """``library_patched`` when code of any library module loaded before the candidate
    (a module's function, a class's method) is bound, once the plan has run or where the
    core looked between two timed pairs (``seen``: what :func:`_between` found), to a
    stand-in that is not a library's own code (:func:`aka.eval._libstate.rebound_since`)."""
    if any(f["flag"] == "library_patched" for f in guards.flags):
        return
    changed = rebound_since(bindings, _in_candidate(cand_dir), moved)
    if changed:
        guards.flag("library_patched", f"plan: {', '.join(changed[:6])} replaced")
    elif seen:
        guards.flag("library_patched", f"between timed shapes: {', '.join(seen[:6])} "
                    "replaced (put back before the plan ended)")  # fmt: skip


def _between(
    bindings: Bindings, cand_dir: Path, moved: Moved, seen: list[str]
) -> Callable[[int], None]:
    """The sealed core's look between two timed pairs (``Seal.run``'s ``between``): the
    library's bindings as the plan's end looks at them, found stand-ins kept in ``seen``.
    It never raises into the core; a look that fails is a finding of its own."""
    candidate = _in_candidate(cand_dir)

    def look(pair: int) -> None:
        try:
            seen.extend(rebound_since(bindings, candidate, moved))
        except Exception as exc:  # a binding whose comparison raised is not a library's
            seen.append(f"the bindings (the look after pair {pair} raised {_short_error(exc)})")

    return look


def _compiled(req: CandidateRequest, guards: Guards, stage: str) -> None:
    """``torch_compile`` when a kernel task's candidate had torch.compile write code.

    Inductor turns torch code into kernels of its own (C++ on the CPU, Triton on a GPU,
    launched past the launch hook) that run no ATen operator: the operators a task
    forbids, traced at import where nothing records them, ran in every call unseen. On
    a task whose answer is a kernel, a compiler writing it is the library's answer. Read
    from dynamo's counters (a tripwire: they can be reset), only where dynamo was
    imported; torch-backend tasks may compile.
    """
    row = backend(req.backend)
    utils = sys.modules.get("torch._dynamo.utils")
    if not (row.counts_launches or row.lists_device_kernels) or utils is None:
        return
    if any(f["flag"] == "torch_compile" for f in guards.flags):
        return
    counters = getattr(utils, "counters", {})
    graphs = counters.get("stats", {}).get("unique_graphs", 0)
    built = sum(counters.get("inductor", {}).values()) + counters.get("frames", {}).get("ok", 0)
    if graphs or built:
        guards.flag(
            "torch_compile",
            f"{stage}: torch.compile built {graphs} graph(s): the compiler wrote these "
            "kernels, and they run no operator the task's checks can see",
        )


def _gpu_compiled(kinds: Launches, guards: Guards, cand_dir: Path) -> list[str]:
    """``gpu_compile`` for each of the candidate's kernels the plan launched under the
    interpreter that Triton cannot compile for a GPU (:mod:`aka.eval._gpu_compile`);
    notes when it could not tell."""
    failures, notes = gpu_compile_check(kinds, str(cand_dir))
    if failures:
        guards.flag("gpu_compile", "; ".join(failures))
    return notes


def _kernel_caches(contained: bool) -> tuple[str, ...]:
    """The folders where this process may build kernels, created now.

    A warm worker's are its candidate tree's own (:func:`aka.eval._warm.cache_env`);
    without them, a contained process gets folders in its private temporary folder (gone
    with it), so that no build writes where another process reads (everything else
    turns read-only).
    """
    out = []
    for name in CACHE_KEYS:
        if not os.environ.get(name):
            if not contained:
                continue
            os.environ[name] = os.path.join(tempfile.gettempdir(), f"aka-{name.lower()}")
            continue  # made inside the private temporary folder, on first use
        os.makedirs(os.environ[name], exist_ok=True)
        out.append(os.environ[name])
    return tuple(out)


def _code_caches(backend_name: str, device: str) -> tuple[str, ...] | None:
    """The only folder this process may write whose files it may load as native code:
    on a GPU, Triton's cache (set by :func:`_kernel_caches`), where Triton compiles its
    launchers; on the CPU none (the interpreter builds nothing). Every other folder it
    can write is mounted ``noexec`` (:mod:`aka.eval._foreign`); ``None`` (nothing
    ``noexec``) for a backend whose candidates may build native code."""
    if backend(backend_name).builds_native:
        return None
    if device == "cpu":
        return ()
    return tuple(p for p in [os.environ.get("TRITON_CACHE_DIR")] if p)


def _own_folder(eval_root: str) -> tuple[str, ...]:
    """The working folder, when it lies in the evaluation's folder (the processes of one
    evaluation share it on disk): replaced by a private one, so nothing this process
    leaves there reaches the next (a module a later interpreter would import first)."""
    here = os.path.realpath(os.getcwd())
    inside = here.startswith(os.path.realpath(eval_root).rstrip("/") + "/")
    return (here,) if inside else ()


def run(req: CandidateRequest, result_fd: int, network: str, pid_ns: str) -> None:
    """Load, seal, contain, import the candidate, run the plan; everything leaves framed.

    ``network`` and ``pid_ns`` say how this process was isolated before it read ``req``.
    """
    import torch

    from aka.eval import _contain, _drawer, _native

    notes: list[str] = []
    device = req.device
    out_fd = os.open(req.out_dir, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        ref = load_file_module(
            Path(req.task_dir) / req.reference, f"_ref_{secrets.token_hex(4)}", keep=False
        )
        make_inputs = ref.make_inputs
        del ref  # the reference function is not kept in this process
        drawing = InputDraw(make_inputs, req.task_files or [], req.task_dir)
        core = _native.load(req.native)
        base = load_file_module(
            Path(req.base_dir) / req.entry_file, f"_base_{secrets.token_hex(4)}", keep=False
        )
        baseline = _entry(base, req.entry_file, req.entry_symbol)
        seal = core.Seal(0, result_fd, out_fd, device, drawing, baseline, req.pass_shape)
    except Exception as exc:
        error = f"harness failed to load the reference or baseline: {_short_error(exc)}"
        os.write(2, (error + "\n").encode())  # the parent quotes the stderr tail
        raise SystemExit(3) from exc
    if device.startswith("cuda"):  # the driver starts before the filesystem narrows
        # float32 means float32: cuDNN's default runs float32 convolutions in TF32
        # (about 1e-3 relative), which fails the float32 tolerances of an honest baseline.
        torch.backends.cudnn.allow_tf32 = False
        torch.backends.cuda.matmul.allow_tf32 = False
        torch.empty(1, device=device)
        torch.cuda.synchronize(device)
    caches = _kernel_caches(req.contain)
    contained = _contain.hide(
        req.hide,
        keep=req.eval_root,
        private=(tempfile.gettempdir(), "/dev/shm"),
        fresh=_own_folder(req.eval_root),
        read_only=True,
        writable=caches,
        executable=_code_caches(req.backend, device),
        enabled=req.contain,
    )
    limits = _contain.limit(
        device,
        max_file_bytes=req.max_file_bytes,
        address_space_bytes=req.max_memory_bytes,
    )
    # Before candidate code: no signal, priority, scheduling or limit change reaches
    # another process (another evaluation's, the evaluator's) from here on.
    others = core.confine_others() if req.contain else "other processes not confined: not asked"
    contained = "; ".join([contained, pid_ns, *limits, others])
    seal.send_py(json.dumps({"kind": "mark", "name": "started", "network": network}))
    launches = LaunchCounter()
    if backend(req.backend).counts_launches:
        launches.install()
        if launches.hook_code is not None:
            core.hook_launches(launches.hook_code)
        launches.drawing = drawing
        if device == "cpu":  # the interpreter's kernels, compiled for a GPU after the plan
            launches.kinds = Launches()
    cand_dir = Path(req.cand_dir)
    guards = Guards(
        cand_dir,
        deny_roots=[Path(req.eval_root), Path(req.out_dir)],
        allow_roots=[Path(tempfile.gettempdir()), Path(sys.prefix), Path(sys.base_prefix)],
    )
    guards.install([])
    seal.send_py(json.dumps({"kind": "mark", "name": "loaded", "network": network}))
    # The baseline's modules as the harness loaded them: what the candidate's import
    # rebinds there (a slower kernel under the baseline's name, corpus ``s30``) is caught
    # against this, even where the name still holds something its file defines.
    held: tuple[ModuleType, ...] = (base,)
    before = snapshot(req.task_files or [], held)
    library = snapshot_library()  # after torch._dynamo wrapped its own (see _libstate)
    task_roots = tuple(str(Path(d).resolve()) + os.sep for d in (req.task_dir, req.base_dir))
    bindings = bind_library(core.moved_bindings, task=lambda f: f.startswith(task_roots))
    if req.drawer:
        # Forked last before the candidate's import, once the core holds the key their
        # pipes are sealed with: processes laid out as this one (contained, confined, the
        # guards' hooks in place) where no candidate code ever existed.
        draws, timer = _drawer.start(seal, make_inputs, timer=req.timer)
        seal.adopt_drawer(draws, timer)
        guards.harness_children()
    # The harness's forks are made: a fork of the candidate's finds the vault zeroed.
    contained += "; " + seal.forget_on_fork()
    if req.contain and device == "cpu" and not backend(req.backend).builds_native:
        # last: the drawer is forked, and nothing of the harness starts a thread after;
        # not where candidates may build native code (torch.compile keeps threads)
        contained += "; " + core.no_new_threads()
    t0 = time.perf_counter()
    candidate: Callable[..., Any] | None = None
    compiled: dict[str, Any]
    try:
        module = load_file_module(cand_dir / req.entry_file, "aka_candidate")
        held = (base, module)
        candidate = _entry(module, req.entry_file, req.entry_symbol)
        compiled = {"ok": True, "error": None, "wall_s": time.perf_counter() - t0}
    except Exception as exc:
        compiled = {"ok": False, "error": _short_error(exc), "wall_s": time.perf_counter() - t0}
    guards.check_state("compile")
    _task_code(req, guards, "compile", changed_since(before), held)
    _library(guards, "compile", library)
    _compiled(req, guards, "compile")
    loaded = snapshot(req.task_files or [], held)
    if candidate is not None:
        seal.send_py(json.dumps({"kind": "mark", "name": "compiled"}))
        launches.ping = core.launched if launches.hooked else None
        seen: list[str] = []
        try:
            seal.run(candidate, _between(bindings, cand_dir, core.moved_bindings, seen))
        finally:
            launches.ping = None
    seal.stop_drawer()  # the plan is over (or never ran): nothing is drawn after it
    if candidate is not None:
        if drawing.found:
            guards.flag("inputs_hook", "Triton kernels not of the task ran while the "
                        f"evaluator drew inputs, outside every timed window: "
                        f"{', '.join(drawing.found)}")  # fmt: skip
        if launches.kinds is not None:
            notes += _gpu_compiled(launches.kinds, guards, cand_dir)
        guards.check_state("plan")
        # ``loaded`` holds what ``before`` held, unchanged (else the compile stage flagged).
        _task_code(req, guards, "plan", changed_since(loaded, data=False), held)
        _library(guards, "plan", library)
        _rebound(guards, bindings, cand_dir, core.moved_bindings, seen)
        _compiled(req, guards, "plan")
        if req.probe_shape:
            try:
                notes += _probes(req, candidate, make_inputs, guards, launches)
            except Exception as exc:
                notes.append(f"probe failed: {_short_error(exc)}")
        guards.check_state("end")
    del torch
    report = CandidateReport(compiled=compiled, flags=guards.flags, notes=notes, error=None,
                             network=network, contained=contained)  # fmt: skip
    seal.send_py(json.dumps(encode_report(report)))


def main() -> None:
    """Read the request line from stdin; the core reads the key and plan after it."""
    import faulthandler

    from aka.eval._contain import NO_PIDNS, contain_descendants

    faulthandler.enable()  # a crash in native code leaves its Python stack on stderr
    fd = int(sys.argv[1])
    # Before any thread or CUDA context exists; the device kind is in the arguments.
    args = [a for a in sys.argv[2:] if a != NO_PIDNS]
    # No PID namespace for CUDA: the driver does not start in a new one under gVisor.
    pid_ns = contain_descendants(
        pid_namespace=NO_PIDNS not in sys.argv and not any("cuda" in a for a in args)
    )
    prepared = prepare(args, isolate=True)
    req, delivery = decode(CandidateRequest, read_request())
    adopt(delivery)
    network = prepared or enter_network(req.isolate_network)
    warnings.filterwarnings("ignore")
    profiled(req.profile, "child", run, req, fd, network, pid_ns)
    os.close(fd)


if __name__ == "__main__":
    main()
