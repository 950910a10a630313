# ruff: noqa
# mypy: ignore-errors
"""Pattern 11: an output of another dtype than the baseline's (float64 for a float32 task).

Its values are exact, so the checker, which compares in float64, accepts them; the task's
contract (what a drop-in replacement returns) does not. The same move narrows outputs
where that pays: int32 indices where the baseline returns int64, float16 for float32."""


def scale(x):
    return x.double() * 2 + 1
