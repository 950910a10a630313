"""Validate each task in its own process, with a memory cap and a time limit.

One task that allocates too much (CPU shapes written at GPU size), hangs or crashes the
interpreter must not take the other tasks' results with it: ``aka tasks validate``
validated every task in one process, and one run was OOM-killed at 23 GB before any
result was printed. Here each task runs :func:`aka.validate.validate_task` in a child
(``python -m aka.validate_isolated``) whose data segment is capped with
``resource.setrlimit(RLIMIT_DATA)``; the child records its own ``TaskValidated`` event
and reports the result on stdout. When the child dies or times out, the parent records
a failed ``process`` check naming what happened and the fix, so every task gets a result.

Several tasks validated at once on a GPU (``--jobs``) share it as evaluators in separate
processes: they share one timing gate (:mod:`aka.eval._hostgate`), so each task's A/A
timing runs while every other task's processes are stopped, and a new task starts only
while a quarter of the GPU's memory is free (or when no other task runs).
"""

from __future__ import annotations

import tempfile
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from aka import events as ev
from aka.childjson import read_request, report, run_module
from aka.eval import (
    ADMIT_FREE,
    HOST_GATE_ENV,
    current_workers,
    gpu_free_fraction,
    recover_host_gate,
)
from aka.kinds import TaskValidation
from aka.validate import record_validation

if TYPE_CHECKING:
    from aka.config import ArmConfig
    from aka_ledger import Ledger

MARK = "@@aka-validation@@ "
DEFAULT_MEMORY_GB = {"cpu": 16.0, "cuda": None}
"""The cap when none is given: on a GPU none, since the CUDA driver maps host memory
(pinned buffers, unified addressing) that a data-segment limit could refuse."""


def _request(
    ledger_dir: Path, folder: Path, root: Path | None, device: str, run_id: str,
    quick: bool, review: ArmConfig | None,
) -> dict[str, Any]:  # fmt: skip
    return {
        "ledger": str(ledger_dir), "folder": str(folder), "root": str(root) if root else None,
        "device": device, "run_id": run_id, "quick": quick,
        "review": review.model_dump(mode="json") if review else None,
    }  # fmt: skip


def _died(code: int | None, memory_gb: float | None, timeout_s: float) -> tuple[str, str]:
    """What happened to a child that gave no result, and the fix."""
    cap = f"{memory_gb:g} GB" if memory_gb else "no cap"
    if code is None:
        return (
            f"did not finish within {timeout_s:.0f} s",
            "make the reference and the CPU shapes smaller, or pass a larger --task-timeout",
        )
    if code < 0:
        return (
            f"was killed by signal {-code} (memory cap: {cap}; the system may have run out)",
            "give the task smaller shapes for this device, or raise --memory-gb",
        )
    return (
        f"exited with status {code} before reporting",
        "run `aka tasks validate` on this task alone to see its output",
    )


def validate_in_child(
    ledger: Ledger,
    ledger_dir: Path,
    folder: Path,
    *,
    root: Path | None,
    device: str,
    run_id: str,
    quick: bool = False,
    review: ArmConfig | None = None,
    memory_gb: float | None = None,
    timeout_s: float = 1800.0,
    env: Mapping[str, str] | None = None,
) -> TaskValidation:
    """Validate one task folder in a child process; always returns a result.

    The child appends its ``TaskValidated`` event to the ledger at ``ledger_dir``; when
    it reports nothing, one is appended here (through ``ledger``) with a failed
    ``process`` check. ``env``: variables for the child (the host gate's folder).
    """
    request = _request(ledger_dir, folder, root, device, run_id, quick, review)
    memory = int(memory_gb * (1 << 30)) if memory_gb else None
    res = run_module(
        "aka.validate_isolated", request, mark=MARK, timeout_s=timeout_s, memory_bytes=memory,
        env=env,
    )  # fmt: skip
    if res.docs:
        return _from_json(res.docs[0])
    key = folder.resolve().relative_to(root.resolve()).as_posix() if root else folder.name
    out = TaskValidation(key=key)
    what, fix = _died(res.code, memory_gb, timeout_s)
    tail = " | ".join(res.stderr.strip().splitlines()[-3:])[-600:]
    detail = f"the validation process {what}" + (f": {tail}" if tail else "")
    out.add("process", "fail", detail, fix=fix)
    return record_validation(ledger, run_id, device, out)


@dataclass(frozen=True)
class Validated:
    """One task's result; ``under_load`` is what it got first, with other tasks validated
    at the same time, when it failed then and was validated again alone."""

    folder: Path
    result: TaskValidation
    seconds: float
    under_load: TaskValidation | None = None


ADMIT_GAP_S = 3.0
"""Seconds between two starts, so that the last one's allocations show before the next."""


class _Admission:
    """Who may start now: on a GPU, one task at a time while enough memory is free."""

    def __init__(self, device: str, free: Callable[[str], float | None]) -> None:
        self.device, self.free = device, free
        self._turn = threading.Lock()  # one start at a time
        self._count = threading.Lock()
        self._running = 0

    def _others(self) -> int:
        with self._count:
            return self._running

    @contextmanager
    def slot(self) -> Iterator[None]:
        """Wait for this task's turn to start; it counts as running inside the block."""
        with self._turn:
            while self._others() and (f := self.free(self.device)) is not None and f < ADMIT_FREE:
                time.sleep(1.0)
            if self._others() and self.device.startswith("cuda"):
                time.sleep(ADMIT_GAP_S)
            with self._count:
                self._running += 1
        try:
            yield
        finally:
            with self._count:
                self._running -= 1


def validate_many(
    ledger: Ledger,
    ledger_dir: Path,
    folders: list[Path],
    *,
    jobs: int = 1,
    on_result: Callable[[Validated], None] | None = None,
    on_retry: Callable[[Validated], None] | None = None,
    free: Callable[[str], float | None] = gpu_free_fraction,
    **kwargs: Any,
) -> list[Validated]:
    """Every folder through :func:`validate_in_child`, ``jobs`` at once; in folder order.

    Tasks validated at once share one timing gate (the module docstring), but each one's
    compiles, correctness runs and reference checks still see the others' load, and the
    GPU's memory is shared. With ``jobs`` > 1 every task that fails is therefore validated
    once more alone, and that is its result; the first is kept as ``under_load``.
    ``on_result`` sees each result once it is final: a pass as soon as it finishes, a
    failure once validated alone; ``on_retry`` sees a failure under load as soon as it
    happens (what to show until the retry). ``free``: the free-memory probe a new task
    waits on. ``kwargs`` go to :func:`validate_in_child` (``root``, ``device``, ...).
    """
    jobs = max(1, jobs)
    device = str(kwargs.get("device", "cpu"))
    admission = _Admission(device, free)
    with tempfile.TemporaryDirectory(prefix="aka-host-gate-") as gate_dir:
        shared = {HOST_GATE_ENV: gate_dir}

        def one(folder: Path, under_load: TaskValidation | None = None) -> Validated:
            start = time.perf_counter()
            alone = jobs == 1 or under_load is not None
            try:
                res = validate_in_child(
                    ledger, ledger_dir, folder, env=None if alone else shared, **kwargs
                )
            finally:
                recover_host_gate(
                    Path(gate_dir)
                )  # a child that died holding the gate stopped others
            return Validated(folder, res, time.perf_counter() - start, under_load)

        def first(folder: Path) -> Validated:
            with admission.slot():
                done = one(folder)
            if on_result is not None and (jobs == 1 or done.result.ok):
                on_result(done)
            elif on_retry is not None:
                on_retry(done)
            return done

        if jobs == 1:
            return [first(f) for f in folders]
        with ThreadPoolExecutor(jobs, thread_name_prefix="aka-validate") as pool:
            results = list(pool.map(first, folders))
        out = []
        for done in results:
            if not done.result.ok:
                done = one(done.folder, under_load=done.result)
                if on_result is not None:
                    on_result(done)
            out.append(done)
        return out


def _to_json(res: TaskValidation) -> dict[str, Any]:
    return {
        "key": res.key, "task_tree": res.task_tree, "eval_ids": res.eval_ids,
        "checks": [c.model_dump(mode="json") for c in res.checks],
    }  # fmt: skip


def _from_json(doc: dict[str, Any]) -> TaskValidation:
    return TaskValidation(
        key=doc["key"],
        task_tree=doc["task_tree"],
        eval_ids=list(doc["eval_ids"]),
        checks=[ev.CheckResult.model_validate(c) for c in doc["checks"]],
    )


def main() -> None:
    """Child entry: the request on stdin; the result on stdout after :data:`MARK`."""
    from aka.config import ArmConfig
    from aka.validate import validate_task
    from aka_ledger import Ledger

    req = read_request()
    review = ArmConfig.model_validate(req["review"]) if req["review"] else None
    # Reference checks and task commands run in this process: under a host gate shared
    # with other tasks' processes, their timing stops it from the start.
    current_workers().gate.join(req["device"])
    with Ledger.open(Path(req["ledger"]), registry=ev.REGISTRY, create=True) as led:
        res = validate_task(
            led, Path(req["folder"]), root=Path(req["root"]) if req["root"] else None,
            device=req["device"], run_id=req["run_id"], review=review, quick=req["quick"],
        )  # fmt: skip
    report(MARK, _to_json(res))


if __name__ == "__main__":
    main()
