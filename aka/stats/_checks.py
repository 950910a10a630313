"""Refuse comparisons whose difference would not be the agents' doing.

Two sides are comparable when they ran the same tasks, under the same harness, scored
by the same policy, on the same kind of device. Anything else makes a delta partly an
artifact of the setup; the caller may insist (``force``), and the differences are then
kept as warnings in the result so no report hides them.
"""

from __future__ import annotations

import polars as pl

from aka.errors import InputError

FORCE_FIX = "pass --force to compare anyway (the differences are kept as warnings)"


def _preview(items: set[str], limit: int = 3) -> str:
    shown = sorted(items)[:limit]
    more = f" and {len(items) - limit} more" if len(items) > limit else ""
    return ", ".join(shown) + more


def _values(frame: pl.DataFrame, column: str) -> set[str]:
    return {str(v) for v in frame.get_column(column).drop_nulls().unique().to_list()}


def _per_task(frame: pl.DataFrame, column: str) -> dict[str, set[str]]:
    grouped = frame.group_by("task").agg(pl.col(column).drop_nulls().unique())
    return {row[0]: set(row[1]) for row in grouped.iter_rows()}


def check_distinct(a: pl.DataFrame, b: pl.DataFrame, labels: tuple[str, str]) -> None:
    """Raise when one run/arm appears on both sides: that is a comparison with itself.

    Raises:
        InputError: always for shared (run_id, arm) pairs; ``force`` cannot override it,
            because the pairing would compare attempts with themselves.
    """
    keys_a = set(a.select("run_id", "arm").unique().iter_rows())
    keys_b = set(b.select("run_id", "arm").unique().iter_rows())
    shared = keys_a & keys_b
    if shared:
        names = {f"{run}/{arm}" for run, arm in shared}
        raise InputError(
            f"{labels[0]} and {labels[1]} both contain run/arm {_preview(names)}: "
            "a run compared with itself has no difference to measure",
            fix="compare two different runs, or two arms of one run",
        )


def common_tasks(a: pl.DataFrame, b: pl.DataFrame, labels: tuple[str, str]) -> list[str]:
    """The tasks both sides attempted, sorted.

    Raises:
        InputError: the sides share no task (nothing can be paired, even with force).
    """
    common = _values(a, "task") & _values(b, "task")
    if not common:
        raise InputError(
            f"{labels[0]} and {labels[1]} have no task in common, so no task can be paired",
            fix="compare runs made over the same task set",
        )
    return sorted(common)


def setup_differences(a: pl.DataFrame, b: pl.DataFrame, labels: tuple[str, str]) -> list[str]:
    """Every way the two sides' setups differ, one sentence each (empty when comparable)."""
    la, lb = labels
    problems: list[str] = []
    tasks_a, tasks_b = _values(a, "task"), _values(b, "task")
    if tasks_a != tasks_b:
        only_a, only_b = tasks_a - tasks_b, tasks_b - tasks_a
        parts = [f"only in {la}: {_preview(only_a)}"] if only_a else []
        parts += [f"only in {lb}: {_preview(only_b)}"] if only_b else []
        problems.append(
            f"task sets differ ({'; '.join(parts)}); only the {len(tasks_a & tasks_b)} "
            "common tasks are compared"
        )
    common = tasks_a & tasks_b
    for column, what in (("task_digest", "task specs"), ("harness_digest", "harness digests")):
        per_a, per_b = _per_task(a, column), _per_task(b, column)
        differing = {t for t in common if per_a.get(t, set()) != per_b.get(t, set())}
        if differing:
            problems.append(f"{what} differ for task(s) {_preview(differing)}")
    va, vb = _values(a, "policy"), _values(b, "policy")
    if va != vb:
        problems.append(f"scoring policy differ ({la}: {_preview(va)}; {lb}: {_preview(vb)})")
    # A fingerprint is recorded only with a timing: a side whose candidates all failed
    # measured nothing, so it has no device to disagree with.
    va, vb = _values(a, "device"), _values(b, "device")
    if va and vb and va != vb:
        problems.append(f"device fingerprints differ ({la}: {_preview(va)}; {lb}: {_preview(vb)})")
    return problems


def check_comparable(
    a: pl.DataFrame, b: pl.DataFrame, labels: tuple[str, str], *, force: bool
) -> tuple[list[str], tuple[str, ...]]:
    """Run every check; return the common tasks and the warnings a forced run keeps.

    Raises:
        InputError: self-comparison or no common task (always); setup differences
            (unless ``force``), all listed in one message.
    """
    check_distinct(a, b, labels)
    tasks = common_tasks(a, b, labels)
    problems = setup_differences(a, b, labels)
    if problems and not force:
        raise InputError(
            f"{labels[0]} and {labels[1]} are not comparable: " + "; ".join(problems),
            fix=FORCE_FIX,
        )
    return tasks, tuple(problems)
