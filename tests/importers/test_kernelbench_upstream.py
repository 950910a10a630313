"""KernelBench files written the way upstream writes them import with the right shapes.

The fixtures under ``kernelbench_upstream/`` use upstream's constructs: sizes in
expressions (``M = 1024 * 2``), chained (``height = width = 256``), tuple
(``depth, height, width = 16, 32, 32``) and semicolon assignments, derived values
(``bias_shape = (out_channels, 1, 1)``, ``norm_shape = (out_channels,)``), window
hyperparameters (kernel_size, padding, stride, dilation) that must keep their values,
level-3 layer widths in a list, a helper class Model is built from, a Model that reads
a module-level size, sizes written as literals inside get_inputs(), a file that prints
and one that allocates 64 GiB at import.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest
import torch

from aka import events as ev
from aka.importers import ImportResult, import_kernelbench, plan
from aka.importers._kb_probe import CPU_ELEMENTS
from aka.tasks import Task, load_task
from aka.validate import validate_task
from aka_ledger import Ledger

UPSTREAM = Path(__file__).resolve().parent / "fixtures" / "kernelbench_upstream"
SUITE = ("torch2triton", "kernelbench")


@pytest.fixture(scope="module")
def imported(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, ImportResult]:
    root = tmp_path_factory.mktemp("kb") / "tasks"
    return root, import_kernelbench(UPSTREAM, root)


def _task(root: Path, name: str) -> Task:
    return load_task(root.joinpath(*SUITE, name), root=root)


def _reference(task: Task) -> object:
    path = task.path / "reference.py"
    spec = importlib.util.spec_from_file_location(f"_kbref_{task.name}", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_every_file_gets_one_outcome_with_a_reason(imported: tuple[Path, ImportResult]) -> None:
    _, result = imported
    by_file = {o.path.name: o for o in result.outcomes}
    assert len(by_file) == len(list(UPSTREAM.rglob("*.py")))
    assert by_file["50_conv_fixed_image.py"].status == "imported GPU-only"
    assert "CPU" in by_file["50_conv_fixed_image.py"].detail
    literal = by_file["99_literal_sizes_only.py"]
    assert literal.status == "refused" and "no module-level size" in literal.detail
    assert "module-level name" in literal.fix
    huge = by_file["98_allocates_at_import.py"]  # the cap stopped it in the reading process
    assert huge.status == "refused" and "allocate" in huge.detail and huge.fix
    ok = [o for o in result.outcomes if o.status == "imported"]
    assert len(ok) == 6 and all("held-out" in o.detail and "cpu" in o.detail for o in ok)


def test_sizes_in_expressions_and_tuples_are_read(imported: tuple[Path, ImportResult]) -> None:
    root, _ = imported
    matmul = _task(root, "17_matmul_with_transposed_b").spec.shapes
    assert matmul.tuning == [{"K": 8192, "M": 2048, "N": 4096}]  # M = 1024 * 2, ...
    conv3d = _task(root, "3_convtranspose3d_sum_layernorm").spec.shapes
    assert {"depth", "height", "width", "out_channels"} <= set(conv3d.tuning[0])


def test_window_hyperparameters_keep_their_values(imported: tuple[Path, ImportResult]) -> None:
    root, _ = imported
    task = _task(root, "80_conv_dilated_padded_strided")
    shapes = task.spec.shapes
    for shape in [*shapes.tuning, *shapes.heldout, *shapes.cpu, *shapes.cpu_heldout]:
        assert not any(k.startswith(("kernel", "padding", "stride", "dilation")) for k in shape)
    conv = _reference(task).load_problem(shapes.cpu[0]).get_init_inputs()  # type: ignore[attr-defined]
    assert conv[2:] == [(5, 9), 1, (8, 12), (4, 3)]


def test_derived_values_follow_their_sizes(imported: tuple[Path, ImportResult]) -> None:
    root, _ = imported
    task = _task(root, "21_conv2d_add_scale_sigmoid_groupnorm")
    cpu = task.spec.shapes.cpu[0]
    assert "bias_shape" not in cpu and cpu["out_channels"] < 32
    problem = _reference(task).load_problem(cpu)  # type: ignore[attr-defined]
    assert problem.bias_shape == (cpu["out_channels"], 1, 1)
    assert problem.kernel_size == 3 and problem.num_groups == 8


def test_level3_layer_widths_are_scaled(imported: tuple[Path, ImportResult]) -> None:
    root, _ = imported
    task = _task(root, "1_mlp_with_blocks")
    cpu = task.spec.shapes.cpu[0]
    assert cpu["layer_sizes[0]"] < 16384 and cpu["layer_sizes[1]"] < 8192
    ref = _reference(task)
    inputs = ref.make_inputs(cpu, torch.float32, "cpu", 0)  # type: ignore[attr-defined]
    out = ref.reference(*inputs, **cpu)  # type: ignore[attr-defined]
    assert tuple(out.shape) == (cpu["batch_size"], cpu["output_size"])
    assert "class Block" in (task.path / "source" / "model_new.py").read_text()


def test_heldout_differs_and_cpu_shapes_are_small(imported: tuple[Path, ImportResult]) -> None:
    root, result = imported
    for dest in result.written:
        task = load_task(dest, root=root)
        shapes = task.spec.shapes
        assert shapes.heldout and shapes.heldout != shapes.tuning, task.name
        if "cpu" not in task.spec.devices:
            continue
        ref = _reference(task)
        for shape in [*shapes.cpu, *shapes.cpu_heldout]:
            inputs = ref.make_inputs(shape, torch.float32, "cpu", 0)  # type: ignore[attr-defined]
            assert sum(x.numel() for x in inputs) <= CPU_ELEMENTS, (task.name, shape)


def _entry(task: Task) -> object:
    """The starting model_new.py, loaded as the evaluator loads it (its folder importable);
    each candidate has a process of its own there, so its siblings are dropped here."""
    from aka.eval._candidate import load_file_module

    for sibling in ("kb_loader", "problem"):
        sys.modules.pop(sibling, None)
    return load_file_module(task.path / "source" / "model_new.py", f"_kbnew_{task.name}")


def test_starting_model_matches_the_reference_at_every_cpu_shape(
    imported: tuple[Path, ImportResult],
) -> None:
    root, result = imported
    for dest in result.written:
        task = load_task(dest, root=root)
        if "cpu" not in task.spec.devices:
            continue
        ref, entry = _reference(task), _entry(task)
        for shape in [*task.spec.shapes.cpu, *task.spec.shapes.cpu_heldout]:
            inputs = ref.make_inputs(shape, torch.float32, "cpu", 0)  # type: ignore[attr-defined]
            want = ref.reference(*inputs, **shape)  # type: ignore[attr-defined]
            got = entry.kernelbench_entry(*inputs, **shape)  # type: ignore[attr-defined]
            assert torch.allclose(got.double(), want, atol=1e-4, rtol=1e-4), (task.name, shape)


def test_imported_tasks_pass_quick_validation(
    imported: tuple[Path, ImportResult], tmp_path: Path
) -> None:
    root, result = imported
    with Ledger.open(tmp_path / "led", registry=ev.REGISTRY, create=True) as led:
        for dest in result.written:
            res = validate_task(led, dest, root=root, device="cpu", run_id="v", quick=True)
            assert res.ok, (dest.name, [c for c in res.checks if c.status == "fail"])


def test_one_line_per_file_on_the_command_line(tmp_path: Path, cli) -> None:
    res = cli("tasks", "import", "kernelbench", str(UPSTREAM / "level1"), "--root", str(tmp_path))
    assert res.code == 0, res.err
    lines = (res.out + res.err).splitlines()
    assert sum(line.startswith(("imported", "refused")) for line in lines) == 4
    assert any(
        line.startswith("refused ") and "99_literal" in line and "fix:" in line for line in lines
    )
    assert "2 imported, 1 imported GPU-only, 1 refused" in res.out


@pytest.mark.parametrize(
    ("analysis", "cpu_run", "status"),
    [
        ({"error": "the problem does not run: ImportError: no module named apex"}, {}, "refused"),
        ({"sizes": {"n": 3}, "movers": {}, "kept": {}}, {}, "refused"),
        ({"sizes": {"n": 64}, "movers": {"n": 64}, "heldout": None}, {}, "refused"),
        ({"movers": {"n": 64}, "heldout": {"n": 73}, "cpu": None}, {}, "imported GPU-only"),
        (
            {"movers": {"n": 64}, "heldout": {"n": 73}, "cpu": {"n": 8}, "cpu_heldout": {"n": 9}},
            {"error": "at {'n': 8}: one float64 forward took 9.0 s"},
            "imported GPU-only",
        ),
        (
            {"movers": {"n": 64}, "heldout": {"n": 73}, "cpu": {"n": 8}, "cpu_heldout": {"n": 9}},
            {"seconds": [0.01, 0.01]},
            "imported",
        ),
    ],
)
def test_plan_says_why(analysis: dict, cpu_run: dict, status: str) -> None:
    decided = plan(analysis, cpu_run, cpu_possible=True)
    assert decided.status == status and decided.detail
    if status == "refused":
        assert decided.fix and decided.shapes is None
    else:
        assert decided.shapes is not None and decided.shapes["heldout"]
        assert ("cpu" in decided.devices) == ("cpu" in decided.shapes)
