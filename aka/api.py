"""A Python API for RL loops: evaluate candidates without an agent, every one recorded.

An external trainer proposes kernel sources; :class:`Evaluator` scores them with the
arena's evaluator and records each as an attempt of a service run through the same
recorder as ``aka run`` (:mod:`aka.recorder`: the same events, durability and failure
handling, so ``aka report``, ``aka export rewards`` and ``aka audit`` work on them)::

    from aka.api import Evaluator
    with Evaluator(".aka", tasks_root="tasks", device="cpu") as ev:
        r = ev.evaluate("triton2triton/llm/softmax", {"kernel.py": source})
        r.reward, r.correct, r.speedup

Several evaluations run at once, up to the evaluator's in-flight limit
(:mod:`aka.inflight`): ``evaluate`` may be called from many threads (``aka serve`` does),
and ``evaluate_batch`` runs a batch that way. Their compiles and correctness runs overlap
on the CPU cores; timing stays exclusive per device (the evaluator's timing gate).

``aka serve`` exposes the same over HTTP on 127.0.0.1 (docs/api.md).
"""

from __future__ import annotations

import contextlib
import json
import os
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import TypeAlias

from aka import __version__, inflight, recorder
from aka import events as ev
from aka.config import ArmConfig, RunConfig, TimingSettings
from aka.core import attempt_key
from aka.errors import InputError
from aka.eval import EvalRequest, current_workers, evaluate
from aka.events import REGISTRY
from aka.feedback import render_feedback
from aka.kinds import kind_name, sealed, staged
from aka.liveness import holding
from aka.orchestrator import environment, harness_digest, new_run_id, resolve_device
from aka.recorder import AttemptRecorder
from aka.runkeys import with_authority
from aka.sample import EvalResult, Sample, record_sample
from aka.scoring import Measurements, score
from aka.taskhealth import TaskHealth
from aka.tasks import Task, select
from aka.treatments import ResolvedArm
from aka.workspace import capture_files, is_editable
from aka_ledger import Ledger

__all__ = ["EXTERNAL", "UNSEALED_ENV", "EvalResult", "Evaluator", "Files", "Sample", "check"]

EXTERNAL = "external"
UNSEALED_ENV = "AKA_UNSEALED"
"""``1``: evaluators score tasks whose verdicts a candidate can forge (trusted candidates)."""
Files: TypeAlias = dict[str, str | bytes]
"""A candidate as sent: editable path -> new source."""


class Evaluator:
    """Scores candidates for one ledger, as attempts of one service run.

    Thread-safe: up to ``in_flight`` evaluations run at once, from any threads; more
    wait for a slot. Only the run's bookkeeping (its start, each attempt's plan and
    number) is serialized; the ledger's appends are safe from several threads.

    Args:
        ledger: the ledger folder, or an open ledger (left open on close).
        tasks_root: the tasks folder.
        device: ``cpu``, ``cuda``, ``cuda:N``, ``auto``, or several GPUs (``cuda:0,1,2,3``):
            each evaluation then goes to the GPU with the fewest in flight, and each GPU
            times one candidate at a time (:class:`aka.inflight.Devices`).
        policy: the scoring policy.
        timing: the timing settings.
        label: the service run's label.
        in_flight: evaluations at once over all its devices (default ``AKA_IN_FLIGHT``,
            else half the CPU cores, at most 8: :func:`aka.inflight.default_in_flight`);
            1 evaluates one at a time.
        unsealed: score tasks whose verdicts a candidate can forge too (a command task's
            own scripts run the candidate's code where they decide: :func:`aka.kinds.sealed`).
            Default ``AKA_UNSEALED=1``, else no: such a task is refused, since a policy
            trained on it learns to forge rather than to write kernels.
    """

    def __init__(
        self,
        ledger: str | Path | Ledger,
        *,
        tasks_root: str | Path = "tasks",
        device: str = "auto",
        policy: str = "agentkernelarena",
        timing: TimingSettings | None = None,
        label: str = "service",
        in_flight: int | None = None,
        unsealed: bool | None = None,
    ):
        self.unsealed = os.environ.get(UNSEALED_ENV) == "1" if unsealed is None else unsealed
        self.in_flight = inflight.resolve(in_flight, where="Evaluator(in_flight=)")
        self._slots = inflight.Slots(self.in_flight)
        self.device = resolve_device(device)
        self.devices = inflight.Devices(inflight.parse_devices(self.device, where="device"))
        self._own = not isinstance(ledger, Ledger)
        self.ledger = (
            Ledger.open(Path(ledger), registry=REGISTRY)
            if not isinstance(ledger, Ledger)
            else ledger
        )
        with_authority(self.ledger)
        self.root = Path(tasks_root)
        self.policy = policy
        self.timing = timing or TimingSettings()
        self.label = label
        self.run_id = new_run_id(label)
        self._tasks: dict[str, tuple[Task, str]] = {}
        self._counts: dict[str, int] = {}
        self._lock = threading.Lock()  # the run's bookkeeping; never held while evaluating
        self._harness = harness_digest(self.ledger)
        self._arm = ""
        self._started = False
        self._held = contextlib.ExitStack()
        self._health = TaskHealth(self.ledger, self.run_id)
        self._staged = contextlib.ExitStack()

    def __enter__(self) -> Evaluator:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Finish the service run (every attempt was scored as it came), then let go.

        Evaluations still in flight (another thread's) finish and are recorded first.
        The run's ``RunFinished`` marks it done for ``aka status``; the ledger is closed
        if this evaluator opened it.
        """
        self._slots.wait_idle()
        with self._lock:
            if self._started:
                n = sum(self._counts.values())
                recorder.finish_run(self.ledger, self.run_id, attempts=n, scored=n)
                self._started = False
        self._held.close()
        self._staged.close()
        if self._own:
            self.ledger.close()

    def task(self, key: str) -> Task:
        """The loaded task ``key`` (its spec and folder).

        Raises:
            InputError: no such task under the tasks root.
        """
        return self._task(key)[0]

    def task_digest(self, key: str) -> str:
        """The tree digest of task ``key`` as its kind stages it, as its attempts record it."""
        return self._task(key)[1]

    def _task(self, key: str) -> tuple[Task, str]:
        """The task loaded from its staged tree (what ``aka run`` records), and that tree."""
        with self._lock:
            if key not in self._tasks:
                (task,) = select(self.root, [key], where="task")[:1]
                if not self.unsealed and not sealed(task):
                    raise InputError(
                        f"task {key} is judged by its own commands ({kind_name(task.spec)} "
                        "kind), which run the candidate's code in the process that checks "
                        "and times it: a candidate can forge its verdict, so its rewards "
                        "cannot be trusted",
                        where="task",
                        fix="score a kernel task (reference.py), or pass "
                        f"Evaluator(unsealed=True) / {UNSEALED_ENV}=1 / `aka serve "
                        "--unsealed` for candidates you trust",
                    )
                self._tasks[key] = self._staged.enter_context(staged(self.ledger.cas, task))
            return self._tasks[key]

    def _start(self, task_key: str, tree: str) -> None:
        if self._started:
            return
        self._arm = self.ledger.cas.put(ResolvedArm(agent="noop").canonical_json())
        cfg = RunConfig(
            label=self.label,
            tasks=[task_key],
            tasks_root=str(self.root),
            arms=[ArmConfig(name=EXTERNAL, agent="noop")],
            device="cuda" if len(self.devices.devices) > 1 else self.device,
            timing=self.timing,  # the run records the timing its candidates were given
        )
        started = ev.RunStarted(
            label=self.label,
            config=self.ledger.cas.put(cfg.canonical_json()),
            config_path="(api)",
            tasks={task_key: tree},
            arms={EXTERNAL: self._arm},
            device=self.device,
            environment=self.ledger.cas.put(json.dumps(environment(), sort_keys=True).encode()),
            harness=self._harness,
            policy=self.policy,
            aka_version=__version__,
            writers={w: (m.last, m.head) for w, m in self.ledger.marks().items()},
        )
        recorder.start_run(self.ledger, self.run_id, started)
        self._held.enter_context(holding(self.ledger.root, self.run_id))
        self._started = True
        self._prepare_workers()

    def _prepare_workers(self) -> None:
        """Each device's share of the in-flight limit of evaluation processes, started now
        (:meth:`aka.eval.Workers.prepare`): a trainer's first batch finds them waiting
        rather than each evaluation beside the first starting its own."""
        if self.in_flight < 2:
            return
        workers = current_workers()
        share = -(-self.in_flight // len(self.devices.devices))
        for device in self.devices.devices:
            workers.prepare(device, workers.switches.isolate_network, share)

    def evaluate(
        self, task_key: str, files: dict[str, str | bytes], *, sample: Sample | None = None
    ) -> EvalResult:
        """Score ``files`` (editable path -> source) as a candidate for ``task_key``.

        Args:
            task_key: the task, relative to the tasks root.
            files: editable path -> new source; files left out keep their starting source.
            sample: where the candidate came from in a trainer (recorded with it).

        Raises:
            InputError: unknown task, or a file the task does not declare editable.
            TaskError: the task fails by itself (its baseline fails too); recorded as the
                attempt's task failure, no reward.
            Exception: whatever else failed the attempt, once recorded as its error.
        """
        task, tree = self._task(task_key)
        extra = sorted(f for f in files if not is_editable(f, task.spec.editable))
        if extra:
            raise InputError(
                f"not editable in {task_key}: {extra}",
                where="files",
                fix=f"send only {task.spec.editable}",
            )
        with self._slots.held(), self.devices.lease() as device:
            with self._lock:
                key = self._plan(task_key, tree, sample)
            cand_tree, diff = capture_files(self.ledger.cas, task, files)
            rec = AttemptRecorder(self.ledger, self.run_id, key, try_no=1)

            def body(rec: AttemptRecorder) -> ev.Scored:
                record_sample(rec, self._arm, sample)
                rec.emit(
                    ev.CandidateCaptured(
                        try_no=1, tree=cand_tree, diff=self.ledger.cas.put(diff),
                        changed=sorted(files),
                    )
                )  # fmt: skip
                req = EvalRequest(
                    task=task,
                    task_tree=tree,
                    candidate=cand_tree,
                    harness=self._harness,
                    device=device,
                    policy=self.policy,
                    timing=self.timing,
                    try_no=1,
                    hide=(str(self.root.resolve()),),  # the suite the task was staged from
                )
                vet = self._health.vet(req, task_key)
                return evaluate(rec.ledger, self.run_id, key, req, vet=vet)

            scored = recorder.execute_attempt(
                self.ledger, self.run_id, key, 1, worker="api", body=body, recorder=rec,
                reraise=True,
            )  # fmt: skip
            assert scored is not None  # a failure was re-raised once recorded
        return EvalResult(
            run_id=self.run_id,
            attempt_key=key,
            eval_id=scored.eval_id,
            candidate=cand_tree,
            compiled=scored.compiled,
            correct=scored.correct,
            speedup=scored.speedup,
            reward=scored.score,
            components=scored.components,
            hack_flags=scored.hack_flags,
            error=scored.error,
            feedback=render_feedback(rec.events),
        )

    def reject(self, task_key: str, error: str, *, sample: Sample | None = None) -> EvalResult:
        """Record a response that never became a candidate; it gets the failure score.

        The attempt ends with status ``error`` and ``error`` as its reason; nothing is
        evaluated (there are no files to run). The score is the policy's score for a
        candidate that did not compile (0 under ``agentkernelarena``).

        Raises:
            InputError: unknown task.
        """
        _, tree = self._task(task_key)
        failed = score(Measurements(compiled=False, correct=False), self.policy)
        with self._lock:
            key = self._plan(task_key, tree, sample)
        recorder.reject_attempt(
            self.ledger, self.run_id, key, 1, worker="api", error=error,
            body=lambda rec: record_sample(rec, self._arm, sample),
        )  # fmt: skip
        return EvalResult(
            run_id=self.run_id,
            attempt_key=key,
            eval_id="",
            candidate="",
            compiled=False,
            correct=False,
            speedup=None,
            reward=failed.score,
            components=failed.components,
            hack_flags=[],
            error=error,
        )

    def _plan(self, task_key: str, tree: str, sample: Sample | None) -> str:
        """Plan one more attempt of the service run; returns its key."""
        self._start(task_key, tree)
        repeat = self._counts.get(task_key, 0)
        self._counts[task_key] = repeat + 1
        key = attempt_key(task_key, EXTERNAL, repeat)
        planned = ev.AttemptPlanned(
            task=task_key,
            arm=EXTERNAL,
            agent=sample.trainer if sample else EXTERNAL,
            repeat=repeat,
            order=sum(self._counts.values()),
        )
        recorder.plan_attempts(self.ledger, self.run_id, [(key, planned)])
        return key

    def evaluate_batch(
        self,
        items: Sequence[tuple[str, Files]],
        *,
        samples: Sequence[Sample | None] | None = None,
        in_flight: int | None = None,
    ) -> list[EvalResult]:
        """Score several candidates, up to ``in_flight`` at once; results in input order.

        Each candidate is an attempt of its own, recorded with its sample. Their compiles
        and correctness runs overlap; one device times one candidate at a time.

        Args:
            items: ``(task key, files)`` per candidate, as :meth:`evaluate` takes them.
            samples: each candidate's :class:`Sample` (same length as ``items``), or None.
            in_flight: evaluations at once, at most the evaluator's limit (default that
                limit); 1 evaluates in turn and stops at the first failure.

        Raises:
            InputError: ``samples`` does not match ``items``, or ``in_flight`` is above
                the evaluator's limit.
            Exception: the first failure in input order, raised once every other
                candidate of the batch was evaluated and recorded (see :meth:`evaluate`).
        """
        k = inflight.within(self.in_flight, in_flight)
        given = list(samples) if samples is not None else [None] * len(items)
        if len(given) != len(items):
            raise InputError(
                f"{len(given)} samples for {len(items)} candidates",
                where="evaluate_batch(samples=)",
                fix="pass one sample (or None) per candidate, in the same order",
            )
        pairs = list(zip(items, given, strict=True))
        return inflight.in_order(
            lambda pair: self.evaluate(pair[0][0], pair[0][1], sample=pair[1]), pairs, k
        )


def check(
    ledger: Ledger,
    kernel: Path,
    task_key: str,
    *,
    tasks_root: str | Path = "tasks",
    device: str = "auto",
    editable: str | None = None,
) -> EvalResult:
    """Score one kernel file against a task, recorded as an attempt of its own run.

    The file takes the place of the task's editable file (``editable`` names which one
    when the task has several) and goes through the same evaluator as ``aka run``; the
    run is labelled ``check`` and finished, so ``aka report``, ``aka audit`` and
    ``aka compare`` read it like any other.

    Raises:
        InputError: the file is missing, or the task has several editable files and
            ``editable`` does not name one of them.
    """
    kernel = Path(kernel)
    if not kernel.is_file():
        raise InputError(
            f"{kernel} is not a file", where="KERNEL_FILE", fix="pass a kernel source file"
        )
    # One person's own file, not a policy's sample: tasks that judge themselves are scored.
    with Evaluator(
        ledger, tasks_root=tasks_root, device=device, label="check", unsealed=True
    ) as service:
        task, _ = service._task(task_key)
        names = list(task.spec.editable)
        target = editable or (names[0] if len(names) == 1 else None)
        if target is None or target not in names:
            raise InputError(
                f"task {task_key} has editable files {names}; which one is {kernel.name}?",
                where="--as",
                fix=f"pass --as with one of {names}",
            )
        return service.evaluate(task_key, {target: kernel.read_bytes()})
