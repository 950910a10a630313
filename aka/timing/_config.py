"""Timing configuration: one frozen record, validated once, stored with every result."""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from typing import Any

from aka.errors import InputError

__all__ = ["ENGINE_VERSION", "TimingConfig"]

ENGINE_VERSION = "aka.timing/1"


@dataclass(frozen=True)
class TimingConfig:
    """How to measure a pair of callables.

    Attributes:
        warmup: untimed calls of each arm (rotating input sets) before sampling; they
            load modules, compile, allocate, and give the time estimate that picks the
            timer.
        target_rel_ci: stop once the CI half-width of both medians, relative to the
            median, is at most this (0.005 = 0.5 %).
        max_time_s: sampling time budget (wall clock, both arms together).
        min_samples: samples per arm before the stop rule may say "converged" or
            "time_budget".
        max_samples: hard cap of samples per arm.
        use_cuda_graph: ``True`` always replays CUDA graphs, ``False`` never, ``None``
            decides from the warm-up: graphs when an arm's median is under
            ``graph_below_s`` (launch overhead then dominates) and both arms capture.
        l2_flush: zero a buffer of ``flush_factor`` x L2 before each GPU sample.
        seed: seeds the interleaving order and the bootstrap.
        level: confidence level of every interval.
        n_boot: bootstrap resamples for the speedup CI.
        graph_below_s: warm-up median under which ``use_cuda_graph=None`` picks graphs.
        flush_factor: flush size as a multiple of the device's L2 (>= 2).
        pre_spin_s: GPU busy-wait queued before each sample's start event, so the
            launch is queued before the GPU reaches the window and idle-launch gaps
            stay out of it.
        floor_s: systematic error allowed on each median, added to the speedup CI's
            ends: which buffers and which graph an arm got moves a short kernel's
            median by tens of nanoseconds that no resampling within one process can
            reveal (A/A on H200: docs/benchmarks.md). Not part of the stop rule.
        host_slack_s: host-versus-event excess (beyond the calibrated idle excess) above
            which a sample window is suspected of holding untimed side-stream work;
            the suspicion also needs 10 % of the event time.
    """

    warmup: int = 5
    target_rel_ci: float = 0.005
    max_time_s: float = 10.0
    min_samples: int = 20
    max_samples: int = 5000
    use_cuda_graph: bool | None = None
    l2_flush: bool = True
    seed: int = 0
    level: float = 0.95
    n_boot: int = 2000
    graph_below_s: float = 100e-6
    flush_factor: float = 2.0
    pre_spin_s: float = 20e-6
    host_slack_s: float = 100e-6
    floor_s: float = 100e-9

    def __post_init__(self) -> None:
        checks: list[tuple[str, bool, str]] = [
            ("warmup", self.warmup >= 0, "use 0 or more warm-up calls"),
            ("target_rel_ci", 0.0 < self.target_rel_ci < 1.0, "use e.g. 0.005 for 0.5 %"),
            ("max_time_s", self.max_time_s > 0.0 and math.isfinite(self.max_time_s), "> 0 s"),
            ("min_samples", self.min_samples >= 3, "use at least 3 samples per arm"),
            ("max_samples", self.max_samples >= self.min_samples, "use >= min_samples"),
            ("level", 0.5 < self.level < 1.0, "use e.g. 0.95"),
            ("n_boot", self.n_boot >= 100, "use at least 100 resamples"),
            ("graph_below_s", self.graph_below_s >= 0.0, "use a time in seconds >= 0"),
            ("flush_factor", self.flush_factor >= 2.0, "flush at least 2x the L2 size"),
            ("pre_spin_s", 0.0 <= self.pre_spin_s <= 0.01, "use 0 to 10 ms"),
            ("host_slack_s", self.host_slack_s >= 0.0, "use a time in seconds >= 0"),
            ("floor_s", self.floor_s >= 0.0, "use a time in seconds >= 0"),
        ]
        for name, ok, fix in checks:
            if not ok:
                raise InputError(
                    f"invalid value {getattr(self, name)!r}",
                    where=f"TimingConfig.{name}",
                    fix=fix,
                )

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-able copy, stored with every measurement."""
        return dataclasses.asdict(self)
