# ruff: noqa
# mypy: ignore-errors
"""Honest: one vectorized expression (faster than the chunked baseline)."""
import torch


def scale(x):
    return x * 2 + 1
