"""What kind of kernel a candidate launched: Triton launch counting and CUDA kernel names.

For torch-to-kernel tasks the required kind of kernel must actually run: a Triton task's
candidate must launch at least one Triton kernel, and turning every launch into a no-op
must change its output (else the kernel is decoration and the answer comes from
elsewhere); a CUDA task's candidate must run a kernel that no library ships.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from pathlib import Path
from types import CodeType
from typing import Any

from aka.eval._gpu_compile import Launches, track_interpreter

LIBRARY_KERNEL_PREFIXES = (
    "void at::", "at::", "void (anonymous namespace)", "cutlass", "cublas", "cudnn", "sm80_",
    "sm90_", "sm100_", "ampere_", "volta_", "turing_", "gemv", "gemm", "nvjet", "Memcpy",
    "Memset", "void cutlass", "void cublas", "void gemv", "void splitKreduce", "triton_",
)  # fmt: skip


def own_kernels(names: Iterable[str]) -> list[str]:
    """Kernel names (from the profiler) that are not a library's."""
    return sorted(n for n in names if not n.startswith(LIBRARY_KERNEL_PREFIXES))


def cuda_kernel_names(run: Callable[[], Any]) -> set[str] | str:
    """Names of the CUDA kernels ``run`` launched (torch profiler), or why none are known."""
    try:
        import torch
        from torch.profiler import ProfilerActivity, profile

        with profile(activities=[ProfilerActivity.CUDA]) as prof:
            run()
        cuda = torch.autograd.DeviceType.CUDA
        names = {e.name for e in prof.events() if e.device_type == cuda}
    except Exception as exc:  # no profiler here
        return f"profiler unavailable ({type(exc).__name__})"
    return names or "the profiler recorded no kernel"


def _empty(grid: Any) -> bool:
    """Whether a launch grid given as numbers has no program at all (``(0,)``)."""
    if isinstance(grid, int):
        return grid <= 0
    if isinstance(grid, tuple | list) and grid and all(isinstance(g, int) for g in grid):
        return any(g <= 0 for g in grid)
    return False


def _recording(grid: Callable[..., Any], used: list[Any]) -> Callable[..., Any]:
    """``grid`` as Triton calls it, each answer kept in ``used``: a grid computed to zero
    programs launched nothing, and a callable asked again could answer otherwise."""

    def recorded(*args: Any, **kwargs: Any) -> Any:
        got = grid(*args, **kwargs)
        used.append(got)
        return got

    return recorded


class InputDraw:
    """The task's ``make_inputs`` as the sealed core calls it, watched for kernels that
    are not the task's own.

    What runs while the inputs of a call are drawn runs outside every timed window. A
    candidate that rebinds a library function the reference's ``make_inputs`` calls
    (``torch.where``, say) to its own Triton kernels computes the answer there, and each
    timed call only copies it: no ATen operator runs in a candidate frame for the
    recorder to see, and every round is as fast as every other for the replay check
    (corpus ``s43_inputs_hook_triton``). A Triton kernel launched meanwhile whose code is
    not in the task's files is ``inputs_hook``. A tripwire (this is Python in the
    candidate's process): drawing inputs where candidate code never runs would close
    the class."""

    def __init__(self, make_inputs: Callable[..., Any], task_files: Iterable[str],
                 task_dir: str) -> None:  # fmt: skip
        """``task_files``: the task's own sources in the evaluation's trees; every file
        under ``task_dir`` (the reference's folder) is the task's too."""
        self.make_inputs = make_inputs
        self.task_files = {str(Path(f).resolve()) for f in task_files}
        self.task_dir = Path(task_dir).resolve()
        self.active = False
        self.found: list[str] = []

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        self.active = True
        try:
            return self.make_inputs(*args, **kwargs)
        finally:
            self.active = False

    def launched(self, kernel: Any) -> None:
        """A Triton kernel launched while inputs were drawn: noted unless it is the task's."""
        fn = getattr(kernel, "fn", None)
        code = getattr(fn, "__code__", None)
        where = str(Path(code.co_filename).resolve()) if code is not None else "?"
        if where in self.task_files or Path(where).is_relative_to(self.task_dir):
            return
        name = getattr(fn, "__qualname__", None) or type(kernel).__name__
        item = f"{name} ({Path(where).name})"
        if item not in self.found and len(self.found) < 8:
            self.found.append(item)


class LaunchCounter:
    """Counts Triton kernel launches made while ``counting``; can turn them into no-ops."""

    def __init__(self) -> None:
        self.launches = 0
        self.counting = False
        self.noop = False
        self.hooked: list[str] = []
        # The wrapper's code object, the same for every class wrapped: the sealed core
        # counts a ``ping`` only from a frame running it (``hook_launches``).
        self.hook_code: CodeType | None = None
        # Called from inside every launch while the sealed plan runs: the core counts
        # the candidate calls that returned without one (its ``launched``).
        self.ping: Callable[[], None] | None = None
        # The kernels launched and their argument types (aka.eval._gpu_compile), kept
        # only where set (CPU evaluations): on a GPU the hook stays as cheap as it was.
        self.kinds: Launches | None = None
        self.drawing: InputDraw | None = None  # the task's input generation, if watched

    def install(self) -> None:
        """Wrap ``run`` of Triton's JIT (and interpreter) kernels; no Triton: nothing."""
        classes: list[type] = []
        try:
            from triton.runtime.jit import JITFunction

            classes.append(JITFunction)
        except ImportError:
            return
        try:
            from triton.runtime.interpreter import InterpretedFunction

            classes.append(InterpretedFunction)
            track_interpreter()
        except ImportError:
            pass
        for cls in classes:
            self._wrap(cls)

    def _wrap(self, cls: type) -> None:
        original: Callable[..., Any] = cls.run  # type: ignore[attr-defined]
        counter = self

        def run(kernel: Any, *args: Any, **kwargs: Any) -> Any:
            warmup = kwargs.get("warmup", False)
            if counter.drawing is not None and counter.drawing.active:
                counter.drawing.launched(kernel)
            if counter.counting and not warmup:
                counter.launches += 1
                if counter.noop:
                    return None
            if counter.kinds is not None and not warmup:
                counter.kinds.add(kernel, args, kwargs)
            grid = kwargs.get("grid")
            used: list[Any] = []
            if callable(grid):  # ``grid=lambda meta: ...``: what Triton got from it counts
                kwargs["grid"] = _recording(grid, used)
            result = original(kernel, *args, **kwargs)
            # Only a launch that ran counts for the plan: one that raised (``run(None,
            # ...)`` in a ``try``) or had no program to run launched nothing.
            ran = used[-1] if used else grid
            if counter.ping is not None and not warmup and not callable(ran) and not _empty(ran):
                counter.ping()
            return result

        cls.run = run  # type: ignore[attr-defined]
        self.hooked.append(f"{cls.__module__}.{cls.__qualname__}.run")
        self.hook_code = run.__code__
