"""The schedule benchmark: how close greedy claiming gets to the best possible makespan.

Workers claim attempts greedily in one shared order, so the schedule is list scheduling.
Claiming longest-first (by a per-task duration estimate, since an attempt's own
duration is unknown until it runs) is Graham's LPT rule: within 4/3 of optimal in the
worst case and, with many more attempts than workers, close to the lower bound
``max(longest attempt, total / workers)``. The simulation is pure (seeded durations,
an event heap); the claim latency is measured on a real directory with real processes.
"""

from __future__ import annotations

import heapq
import multiprocessing as mp
import random
import statistics
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path

from aka.claims import claim_next

__all__ = [
    "ClaimLatency",
    "SimAttempt",
    "SimResult",
    "measure_claim_latency",
    "simulate",
    "synthetic_attempts",
]


@dataclass(frozen=True)
class SimAttempt:
    """One simulated attempt: its task, its true duration and the task's estimate."""

    task: str
    seconds: float
    estimate: float


@dataclass(frozen=True)
class SimResult:
    """One simulated schedule.

    Attributes:
        workers: worker count.
        order: ``"longest-first"`` (by estimate) or ``"planned"`` (the plan's order).
        makespan_s: when the last attempt finished.
        lower_bound_s: ``max(longest, total / workers)``; no schedule can beat it.
        ratio: ``makespan / lower_bound`` (1.0 is perfect).
        mean_utilization: busy share of the makespan, averaged over workers.
    """

    workers: int
    order: str
    attempts: int
    makespan_s: float
    lower_bound_s: float
    ratio: float
    mean_utilization: float

    def as_dict(self) -> dict[str, object]:
        """JSON-ready fields."""
        return asdict(self)


def synthetic_attempts(n: int = 1000, *, tasks: int = 50, seed: int = 0) -> list[SimAttempt]:
    """``n`` attempts over ``tasks`` tasks with heterogeneous, noisy durations.

    Task means are log-uniform over 30 s .. 30 min (agent runs differ by task size);
    each attempt deviates from its task's mean by a lognormal factor (sigma 0.25),
    so estimates are right on average and wrong per attempt.
    """
    rng = random.Random(seed)
    means = {f"task{t:03d}": 30.0 * 60.0 ** rng.random() for t in range(tasks)}
    names = list(means)
    out = []
    for i in range(n):
        task = names[i % tasks]
        out.append(SimAttempt(task, means[task] * rng.lognormvariate(0.0, 0.25), means[task]))
    return out


def simulate(
    attempts: list[SimAttempt], workers: int, *, order: str = "longest-first", claim_s: float = 0.0
) -> SimResult:
    """List-schedule ``attempts`` over ``workers``: each free worker claims the next one.

    Args:
        attempts: the run's attempts in planned order.
        workers: how many workers claim.
        order: ``"longest-first"`` sorts by estimate (descending); ``"planned"`` keeps order.
        claim_s: seconds each claim costs a worker (measured claim latency).
    """
    if order == "longest-first":
        queue = sorted(attempts, key=lambda a: -a.estimate)
    elif order == "planned":
        queue = list(attempts)
    else:
        raise ValueError(f"unknown order {order!r}")
    free_at = [(0.0, w) for w in range(workers)]
    busy = [0.0] * workers
    for a in queue:
        t, w = heapq.heappop(free_at)
        busy[w] += a.seconds
        heapq.heappush(free_at, (t + claim_s + a.seconds, w))
    makespan = max(t for t, _ in free_at)
    total = sum(a.seconds for a in attempts)
    bound = max(max(a.seconds for a in attempts), total / workers)
    return SimResult(
        workers=workers,
        order=order,
        attempts=len(attempts),
        makespan_s=round(makespan, 3),
        lower_bound_s=round(bound, 3),
        ratio=round(makespan / bound, 4),
        mean_utilization=round(statistics.fmean(b / makespan for b in busy), 4),
    )


@dataclass(frozen=True)
class ClaimLatency:
    """Seconds per claim (claim_next + release) measured with real processes."""

    processes: int
    claims: int
    p50_ms: float
    p99_ms: float
    max_ms: float

    def as_dict(self) -> dict[str, object]:
        """JSON-ready fields."""
        return asdict(self)


def _claimer(root: str, keys: list[str], worker: str, out: mp.Queue[list[float]]) -> None:
    samples = []
    while True:
        t0 = time.perf_counter()
        claim = claim_next(Path(root), "bench", keys, worker, 60.0)
        if claim is None:
            break
        claim.release(done=True)
        samples.append(time.perf_counter() - t0)
        keys = keys[keys.index(claim.key) + 1 :]  # a fresh plan no longer lists it
    out.put(samples)


def measure_claim_latency(
    processes: int = 8, keys: int = 800, root: Path | None = None
) -> ClaimLatency:
    """Race ``processes`` real processes over ``keys`` attempt keys in one directory."""
    with tempfile.TemporaryDirectory(dir=root) as tmp:
        names = [f"task{i % 50:03d}#arm#{i}" for i in range(keys)]
        ctx = mp.get_context("fork")
        queue: mp.Queue[list[float]] = ctx.Queue()
        procs = [
            ctx.Process(target=_claimer, args=(tmp, names, f"w{i}", queue))
            for i in range(processes)
        ]
        for p in procs:
            p.start()
        samples = [s for _ in procs for s in queue.get()]
        for p in procs:
            p.join()
    samples.sort()
    ms = [s * 1000 for s in samples]
    return ClaimLatency(
        processes=processes,
        claims=len(ms),
        p50_ms=round(ms[len(ms) // 2], 3),
        p99_ms=round(ms[min(len(ms) - 1, int(len(ms) * 0.99))], 3),
        max_ms=round(ms[-1], 3),
    )
