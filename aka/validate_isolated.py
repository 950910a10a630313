"""Validate each task in its own process, with a memory cap and a time limit.

One task that allocates too much (CPU shapes written at GPU size), hangs or crashes the
interpreter must not take the other tasks' results with it: ``aka tasks validate``
validated every task in one process, and one run was OOM-killed at 23 GB before any
result was printed. Here each task runs :func:`aka.validate.validate_task` in a child
(``python -m aka.validate_isolated``) whose data segment is capped with
``resource.setrlimit(RLIMIT_DATA)``; the child records its own ``TaskValidated`` event
and reports the result on stdout. When the child dies or times out, the parent records
a failed ``process`` check naming what happened and the fix, so every task gets a result.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from aka import events as ev
from aka.childjson import read_request, report, run_module
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
) -> TaskValidation:
    """Validate one task folder in a child process; always returns a result.

    The child appends its ``TaskValidated`` event to the ledger at ``ledger_dir``; when
    it reports nothing, one is appended here (through ``ledger``) with a failed
    ``process`` check.
    """
    request = _request(ledger_dir, folder, root, device, run_id, quick, review)
    memory = int(memory_gb * (1 << 30)) if memory_gb else None
    res = run_module(
        "aka.validate_isolated", request, mark=MARK, timeout_s=timeout_s, memory_bytes=memory
    )
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


def validate_many(
    ledger: Ledger,
    ledger_dir: Path,
    folders: list[Path],
    *,
    jobs: int = 1,
    on_result: Callable[[Validated], None] | None = None,
    on_retry: Callable[[Validated], None] | None = None,
    **kwargs: Any,
) -> list[Validated]:
    """Every folder through :func:`validate_in_child`, ``jobs`` at once; in folder order.

    Tasks validated at once share the device without one timing gate, so each one's
    timing checks see the others' load (on one H200, seven of forty KernelBench baselines
    failed timing checks with eight to ten at once and passed alone). With ``jobs`` > 1 every
    task that fails is therefore validated once more alone, and that is its result; the
    first is kept as ``under_load``. ``on_result`` sees each result once it is final: a
    pass as soon as it finishes, a failure once validated alone; ``on_retry`` sees a failure
    under load as soon as it happens (what to show until the retry). ``kwargs`` go to
    :func:`validate_in_child` (``root``, ``device``, ``run_id``, ...).
    """
    jobs = max(1, jobs)

    def one(folder: Path, under_load: TaskValidation | None = None) -> Validated:
        start = time.perf_counter()
        res = validate_in_child(ledger, ledger_dir, folder, **kwargs)
        return Validated(folder, res, time.perf_counter() - start, under_load)

    def first(folder: Path) -> Validated:
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
    with Ledger.open(Path(req["ledger"]), registry=ev.REGISTRY, create=True) as led:
        res = validate_task(
            led, Path(req["folder"]), root=Path(req["root"]) if req["root"] else None,
            device=req["device"], run_id=req["run_id"], review=review, quick=req["quick"],
        )  # fmt: skip
    report(MARK, _to_json(res))


if __name__ == "__main__":
    main()
