"""compare(): per-arm numbers, the paired statistics, the refusals and the rendering."""

from __future__ import annotations

import json
import math

import polars as pl
import pytest
from stats_synth import Model, experiment, frame_from

from aka.errors import InputError, NotFoundError
from aka.stats import compare, render_table, select_attempts

# Side A by hand: t1 has a 2.0x win and a failure; t2 has 1.1x and 1.5x.
HAND_A = [
    {"task": "t1", "repeat": 0, "correct": True, "speedup": 2.0},
    {"task": "t1", "repeat": 1, "correct": False, "compiled": True},
    {"task": "t2", "repeat": 0, "correct": True, "speedup": 1.1},
    {"task": "t2", "repeat": 1, "correct": True, "speedup": 1.5},
]
HAND_B = [
    {"task": "t1", "repeat": 0, "correct": True, "speedup": 1.0},
    {"task": "t1", "repeat": 1, "correct": True, "speedup": 1.0},
    {"task": "t2", "repeat": 0, "correct": False},
    {"task": "t2", "repeat": 1, "correct": False},
]


def hand() -> tuple[pl.DataFrame, pl.DataFrame]:
    return frame_from(HAND_A, run_id="run-a"), frame_from(HAND_B, run_id="run-b")


def test_per_arm_numbers_average_repeats_within_a_task_first() -> None:
    cmp = compare(*hand(), n_boot=200, n_permutations=99)
    a, b = cmp.a, cmp.b
    assert a.correct_rate == pytest.approx(0.75)
    assert a.fast_p == pytest.approx({"1.0": 0.75, "1.2": 0.5, "1.5": 0.25, "2.0": 0.0})
    # failures at 0.5: t1 mean log = (ln 2 + ln 0.5) / 2 = 0; t2 = (ln 1.1 + ln 1.5) / 2
    assert a.geomean_speedup == pytest.approx((1.1 * 1.5) ** 0.25)
    assert a.geomean_speedup_correct == pytest.approx((2.0 * 1.1 * 1.5) ** (1 / 3))
    assert a.pass_at_k == pytest.approx({1: 0.75, 2: 1.0})
    assert a.mean_score == pytest.approx(((320 + 20) / 2 + (230 + 270) / 2) / 2)
    assert (a.tokens_in, a.cost_usd, a.n_attempts, a.repeats_min) == (40, 2.0, 4, 2)
    assert b.fast_p["1.0"] == 0.0  # 1.0x is not faster: fast_p is strict
    assert b.geomean_speedup == pytest.approx(math.sqrt(0.5))
    assert cmp.paired.delta_fast_1 == pytest.approx(-0.75)
    # t1: A's mean log is (ln 2 + ln 0.5) / 2 = 0 = B's ln 1.0, a tie; t2: B fails
    paired = cmp.paired
    assert (paired.tasks_better, paired.tasks_worse, paired.tasks_tied) == (0, 1, 1)


def test_the_floor_sets_where_failures_land() -> None:
    a, b = hand()
    low = compare(a, b, floor=0.25, n_boot=200, n_permutations=99)
    assert low.b.geomean_speedup == pytest.approx(math.sqrt(0.25))
    # a correct kernel slower than the floor counts as the floor, not below a failure
    slow = frame_from([{"task": "t1", "repeat": 0, "correct": True, "speedup": 0.1}])
    other = frame_from([{"task": "t1", "repeat": 0, "correct": False}], run_id="r2")
    cmp = compare(slow, other, n_boot=200, n_permutations=99)
    assert cmp.a.geomean_speedup == pytest.approx(0.5)


def test_strong_effects_get_a_verdict_and_null_effects_do_not() -> None:
    model = Model(pass_a=50, pass_b=1)  # nearly always correct
    better = compare(*experiment(1, n_tasks=30, effect=0.5, model=model))
    worse = compare(*experiment(2, n_tasks=30, effect=-0.5, model=model))
    assert better.verdict == "better" and better.paired.speedup_ratio_ci[0] > 1
    assert worse.verdict == "worse" and worse.paired.speedup_ratio_ci[1] < 1
    assert better.paired.permutation_p < 0.05 and better.paired.wilcoxon_p < 0.05
    assert better.paired.cohens_dz > 0 and worse.paired.rank_biserial < 0


def test_a_side_swapped_is_the_mirror_image() -> None:
    a, b = experiment(4, n_tasks=15)
    ab, ba = compare(a, b, seed=1), compare(b, a, seed=1)
    assert ab.paired.delta_log_speedup == pytest.approx(-ba.paired.delta_log_speedup)
    assert ab.paired.permutation_p == pytest.approx(ba.paired.permutation_p)
    assert ab.paired.wilcoxon_p == pytest.approx(ba.paired.wilcoxon_p)


def test_results_are_reproducible_from_the_seed() -> None:
    a, b = experiment(5)
    assert compare(a, b, seed=3).to_dict() == compare(a, b, seed=3).to_dict()


def test_pyarrow_input_and_struct_components_give_the_same_result() -> None:
    a, b = experiment(6)
    structs = b.with_columns(
        pl.col("reward_components").str.json_decode(
            pl.Struct({"compiled": pl.Boolean, "correct": pl.Boolean, "speedup": pl.Float64})
        )
    )
    assert compare(a.to_arrow(), structs).to_dict() == compare(a, b).to_dict()


def test_infra_retries_replace_the_first_try_unless_asked_for_first_tries() -> None:
    a = frame_from(
        [
            {"task": "t1", "repeat": 0, "correct": False, "try_no": 1},
            {
                "task": "t1",
                "repeat": 0,
                "correct": True,
                "speedup": 2.0,
                "try_no": 2,
                "infra_retry": True,
            },
            {"task": "t2", "repeat": 0, "correct": True, "speedup": 1.5},
        ]
    )
    b = frame_from([{"task": t, "repeat": 0, "correct": False} for t in ("t1", "t2")], run_id="r2")
    cmp = compare(a, b, n_boot=200, n_permutations=99)
    assert cmp.a.correct_rate == 1.0
    assert cmp.a.correct_rate_first_try == 0.5
    assert cmp.a.infra_retries == 1
    assert cmp.a.n_attempts == 2
    assert cmp.a.cost_usd == pytest.approx(1.5)  # the lost try was paid for too


def test_intermediate_turns_do_not_count_as_attempts() -> None:
    rows = [
        {"task": "t1", "repeat": 0, "correct": True, "speedup": 9.0, "turn": 1},
        {"task": "t1", "repeat": 0, "correct": False, "turn": 0},
    ]
    b = frame_from([{"task": "t1", "repeat": 0, "correct": False}], run_id="r2")
    cmp = compare(frame_from(rows), b, n_boot=200, n_permutations=99)
    assert cmp.a.correct_rate == 0.0 and cmp.a.n_attempts == 1


def test_to_dict_is_json_and_render_table_ends_with_the_verdict() -> None:
    cmp = compare(*experiment(7), labels=("base", "treat"))
    text = json.dumps(cmp.to_dict(), allow_nan=False)
    assert json.loads(text)["verdict"] == cmp.verdict
    table = render_table(cmp)
    assert "fast_1.5" in table and "pass@3" in table and "permutation p" in table
    assert f"verdict: treat vs base: {cmp.verdict}" in table
    assert "\x1b[" not in table


# --- refusals -------------------------------------------------------------------------


def test_comparing_a_run_with_itself_is_refused_even_with_force() -> None:
    a, _ = experiment(8)
    for force in (False, True):
        with pytest.raises(InputError, match="compared with itself"):
            compare(a, a, force=force)


def test_runs_with_no_common_task_are_refused_even_with_force() -> None:
    a, _ = experiment(9)
    b = frame_from([{"task": "other", "repeat": 0, "correct": True, "speedup": 1.0}], run_id="r")
    for force in (False, True):
        with pytest.raises(InputError, match="no task in common"):
            compare(a, b, force=force)


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (pl.col("device").str.replace("dev", "other-gpu"), "device fingerprints differ"),
        (pl.lit("log_speedup@1"), "scoring policy differ"),
        (pl.col("harness_digest") + "-edited", "harness digests differ"),
        (pl.col("task_digest") + "-v2", "task specs differ"),
    ],
    ids=["device", "policy", "harness", "task-spec"],
)
def test_setup_differences_are_refused_and_kept_as_warnings_with_force(
    change: pl.Expr, message: str
) -> None:
    a, b = experiment(10)
    column = {"device fingerprints differ": "device", "scoring policy differ": "policy"}
    column |= {"harness digests differ": "harness_digest", "task specs differ": "task_digest"}
    b = b.with_columns(change.alias(column[message]))
    with pytest.raises(InputError, match=message) as err:
        compare(a, b)
    assert err.value.fix is not None and "--force" in err.value.fix
    forced = compare(a, b, force=True)
    assert any(message in w for w in forced.warnings)
    assert f"WARNING (forced): {forced.warnings[0]}"[:60] in render_table(forced)


def test_a_side_that_timed_nothing_has_no_device_to_disagree_with() -> None:
    """All of B's candidates failed: no timing, no fingerprint, nothing to refuse."""
    a, b = experiment(13)
    b = b.with_columns(
        pl.lit(False).alias("correct"),
        pl.lit(None, dtype=pl.Float64).alias("speedup"),
        pl.lit(None, dtype=pl.String).alias("device"),
    )
    result = compare(a, b)
    assert result.warnings == ()
    assert result.b.correct_rate == 0.0
    one_timed = b.with_columns(
        pl.when(pl.col("task") == "t000").then(pl.lit("other-gpu")).otherwise(None).alias("device")
    )
    with pytest.raises(InputError, match="device fingerprints differ"):
        compare(a, one_timed)


def test_different_task_sets_compare_only_the_common_tasks_when_forced() -> None:
    a, b = experiment(11, n_tasks=12)
    b = b.filter(pl.col("task") != "t000")
    with pytest.raises(InputError, match="only in A: t000"):
        compare(a, b)
    forced = compare(a, b, force=True)
    assert forced.paired.n_tasks == 11 and forced.a.n_tasks == 11
    assert "t000" not in {t.task for t in forced.tasks}


def test_missing_columns_and_bad_parameters_are_input_errors() -> None:
    a, b = experiment(12)
    with pytest.raises(InputError, match="lacks column"):
        compare(a.drop("harness_digest"), b)
    with pytest.raises(InputError, match="floor"):
        compare(a, b, floor=0.0)
    with pytest.raises(InputError, match="alpha"):
        compare(a, b, alpha=0.7)
    with pytest.raises(InputError, match="no scored final attempt"):
        compare(a, b.filter(pl.col("turn") > 0))
    with pytest.raises(InputError, match="DataFrame"):
        compare(a.to_dicts(), b)


# --- naming a side --------------------------------------------------------------------


def test_select_attempts_resolves_runs_run_arms_and_unique_arm_names() -> None:
    a, b = experiment(13, n_tasks=3)
    other = b.with_columns(pl.lit("run-b").alias("run_id"))
    table = pl.concat([a, b, other])
    assert select_attempts(table, "run-b").height == other.height
    assert select_attempts(table, "run-a").height == a.height + b.height
    assert set(select_attempts(table, "run-a/treat").get_column("arm")) == {"treat"}
    assert select_attempts(table, "base").height == a.height  # only run-a has "base"
    with pytest.raises(InputError, match="several runs") as err:
        select_attempts(table, "treat")
    assert err.value.fix == "name one run's arm, e.g. run-a/treat"
    with pytest.raises(NotFoundError, match="no run or arm named 'run-z'") as missing:
        select_attempts(table, "run-z")
    assert missing.value.exit_code == 2 and "run-a/base" in missing.value.message


def test_two_arms_of_one_run_compare_but_a_run_with_its_own_arm_does_not() -> None:
    table = pl.concat(experiment(14, n_tasks=5))
    cmp = compare(select_attempts(table, "run-a/base"), select_attempts(table, "run-a/treat"))
    assert cmp.a.arms == ("base",) and cmp.b.arms == ("treat",)
    with pytest.raises(InputError, match="compared with itself"):
        compare(select_attempts(table, "run-a"), select_attempts(table, "run-a/treat"))
