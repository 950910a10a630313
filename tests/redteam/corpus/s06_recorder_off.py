# ruff: noqa
# mypy: ignore-errors
"""A forbidden operator (``torch.mul``) with torch's operator recorder switched off.

``torch.autograd._enable_record_function(False)`` turns off every RecordFunction callback
of the thread, the one that sees which operators a candidate calls included; clearing
the callbacks removes it outright. Both are reached by computed names, the product is
taken while the recorder is off, and everything is switched back before returning.
"""
import operator

import torch


def scale(x):
    switch = getattr(torch.autograd, "_enable_record_" + "function")
    clear = getattr(getattr(torch._C, "_auto" + "grad"), "_clear_" + "callbacks")
    switch(False)
    clear()
    try:
        out = operator.methodcaller("".join(["m", "u", "l"]), 2.0)(x)
    finally:
        switch(True)
    return out.add_(1.0)
