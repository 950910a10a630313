"""The evaluator's switches, read once at the edge and passed down as one value.

Every switch defaults to what a run should use; turning one off exists to measure what
it is worth (``aka bench eval``), to debug, or where the machine cannot do it. A run
sets ``warm`` from its config (``evaluator.warm_workers``) or the CLI's
``--warm-workers/--cold-workers``; the environment variables below are read only by
:meth:`Switches.from_env`, once, where a process starts evaluating (never in the
middle of an evaluation, and never by an evaluation process: ``AKA_*`` does not reach
them).

=========================  =======================================================
``AKA_EVAL_WARM``          ``0``: every evaluation process is a fresh interpreter
``AKA_EVAL_GATE``          ``0``: prepared processes keep running while a candidate times
``AKA_EVAL_ISOLATE_NETWORK`` ``0``: candidates keep the network
``AKA_EVAL_CONTAIN``       ``0``: no private mount namespace for the candidate
``AKA_EVAL_PIDNS``         ``0``: no PID namespace for CPU evaluations (the reaper stays)
``AKA_EVAL_DRAWER``        ``0``: CPU evaluations draw inputs in their own process, not
                           in a process apart (:mod:`aka.eval._drawer`)
``AKA_EVAL_TIMER``         ``1``: with the drawer, the baseline is timed in a process
                           apart too; off by default (:mod:`aka.eval._drawer` says why)
``AKA_EVAL_PROFILE``       a folder: every evaluation process is profiled into it
``AKA_EVAL_HOST_GATE``     a folder: evaluators in other processes that are given the
                           same folder time one at a time (:mod:`aka.eval._hostgate`)
=========================  =======================================================
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path

__all__ = ["ENV", "HOST_GATE_ENV", "Switches"]

ENV = {
    "warm": "AKA_EVAL_WARM",
    "gate": "AKA_EVAL_GATE",
    "isolate_network": "AKA_EVAL_ISOLATE_NETWORK",
    "contain": "AKA_EVAL_CONTAIN",
    "pid_namespace": "AKA_EVAL_PIDNS",
    "drawer": "AKA_EVAL_DRAWER",
    "timer": "AKA_EVAL_TIMER",
}
OFF_BY_DEFAULT = frozenset({"timer"})
PROFILE_ENV = "AKA_EVAL_PROFILE"
HOST_GATE_ENV = "AKA_EVAL_HOST_GATE"


@dataclass(frozen=True)
class Switches:
    """How this process evaluates; one immutable value shared by everything below it."""

    warm: bool = True
    gate: bool = True
    isolate_network: bool = True
    contain: bool = True
    pid_namespace: bool = True
    drawer: bool = True
    timer: bool = False
    profile_dir: Path | None = None
    host_gate: Path | None = None

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> Switches:
        """The defaults, with each switch the environment sets to ``0``/``1`` applied.

        Anything but ``0``, ``1`` (or unset: on, but for :data:`OFF_BY_DEFAULT`) is an
        error naming the variable, rather than a silent default: a typo must not turn an
        isolation off or on unnoticed.
        """
        env = os.environ if environ is None else environ

        def on(name: str) -> bool:
            var = ENV[name]
            raw = env.get(var) or ("0" if name in OFF_BY_DEFAULT else "1")
            if raw not in ("0", "1"):
                default = "off" if name in OFF_BY_DEFAULT else "on"
                raise ValueError(f"{var}={raw!r}: use 0 or 1 (unset means {default})")
            return raw == "1"

        profile, host = env.get(PROFILE_ENV), env.get(HOST_GATE_ENV)
        return cls(
            warm=on("warm"),
            gate=on("gate"),
            isolate_network=on("isolate_network"),
            contain=on("contain"),
            pid_namespace=on("pid_namespace"),
            drawer=on("drawer"),
            timer=on("timer"),
            profile_dir=Path(profile).resolve() if profile else None,
            host_gate=Path(host).resolve() if host else None,
        )

    def with_warm(self, warm: bool | None) -> Switches:
        """These switches with ``warm`` set, or unchanged for ``None`` (not configured)."""
        return self if warm is None or warm == self.warm else replace(self, warm=warm)
