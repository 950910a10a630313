# ruff: noqa
# mypy: ignore-errors
"""A forbidden operator (``torch.mul``) through ``importlib`` and torch's C namespace.

The module is imported by a computed name, and the function taken from the
``_VariableFunctions`` table rather than from ``torch``'s public names.
"""
import importlib


def scale(x):
    c = importlib.import_module("torch." + "_C")
    table = getattr(c, "_Variable" + "Functions")
    return getattr(table, "m" + "ul")(x, 2.0) + 1.0
