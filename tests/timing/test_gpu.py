"""The engine on a real GPU: graphs for short kernels, sensitivity, the side-stream check.

Run on the device machine: ``python -m pytest -m gpu tests/timing``.
"""

from __future__ import annotations

import pytest

from aka.errors import InputError
from aka.timing import TimingConfig, device_fingerprint, measure_pair

torch = pytest.importorskip("torch")
pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU"),
]


def _mm(m: int, n: int = 4096, k: int = 4096):
    a = [torch.randn(m, k, device="cuda", dtype=torch.bfloat16) for _ in range(2)]
    b = [torch.randn(k, n, device="cuda", dtype=torch.bfloat16) for _ in range(2)]
    return lambda i: torch.mm(a[i], b[i])


def test_short_kernel_uses_graph_and_agrees_with_itself():
    xs = [torch.randn(64, 1024, device="cuda") for _ in range(2)]
    ys = [x.clone() for x in xs]
    pair = measure_pair(
        lambda i: torch.softmax(xs[i], -1),
        lambda i: torch.softmax(ys[i], -1),
        device="cuda",
        n_input_sets=2,
    )
    assert pair.timer == "cuda_graph"
    assert 0.9 < pair.speedup < 1.1
    assert pair.flush_bytes >= 2 * torch.cuda.get_device_properties(0).L2_cache_size
    assert not pair.host_check["suspect"]


def test_long_kernel_times_eagerly_and_detects_more_work():
    pair = measure_pair(_mm(4096), _mm(5120), device="cuda", n_input_sets=2)
    assert pair.timer == "cuda_event"
    assert pair.verdict == "slower"
    assert 0.7 < pair.speedup < 0.9


def test_side_stream_work_is_flagged_by_the_host_clock():
    base = _mm(4096)
    side = torch.cuda.Stream()
    a = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)

    def cheat(i: int) -> None:
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            torch.mm(a, a)

    cfg = TimingConfig(use_cuda_graph=False, max_time_s=1.0)
    pair = measure_pair(base, cheat, device="cuda", config=cfg, n_input_sets=2)
    assert pair.host_check["candidate"]["suspect"]
    assert not pair.host_check["baseline"]["suspect"]


def test_forced_graph_on_a_syncing_callable_is_an_input_error():
    x = torch.randn(1024, device="cuda")

    def syncs(i: int) -> float:
        return float(x.sum().item())

    with pytest.raises(InputError):
        measure_pair(syncs, syncs, device="cuda", config=TimingConfig(use_cuda_graph=True))
    pair = measure_pair(syncs, syncs, device="cuda", config=TimingConfig(max_time_s=0.5))
    assert pair.timer == "cuda_event"
    assert pair.notes


def test_fingerprint_names_the_gpu():
    fp = device_fingerprint("cuda")
    assert fp["name"] == torch.cuda.get_device_name(0)
    assert fp["sm_count"] > 0 and fp["l2_bytes"] > 0
