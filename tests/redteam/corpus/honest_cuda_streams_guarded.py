# ruff: noqa
# mypy: ignore-errors
"""Honest: uses a side stream and memory queries when CUDA is there, waits for its work.

On the CPU every CUDA call is skipped by the guard; on a GPU the work runs on a side
stream that the current stream waits on before the result is returned.
"""
import torch


def scale(x):
    if x.is_cuda:
        free, total = torch.cuda.mem_get_info(x.device)
        side = torch.cuda.Stream(device=x.device)
        side.wait_stream(torch.cuda.current_stream(x.device))
        with torch.cuda.stream(side):
            out = x * 2.0 + 1.0
        torch.cuda.current_stream(x.device).wait_stream(side)
        out.record_stream(torch.cuda.current_stream(x.device))
        return out
    return x * 2.0 + 1.0
