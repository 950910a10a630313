"""AgentKernelArena folders written the way upstream writes them import and run.

The folders under ``agentkernelarena_upstream/`` and the configs built here from its
``triton_row_scale`` task use upstream's idioms: ``instructions: null`` and ``status:
active``, vllm runners that time with their own CUDA events or call upstream's helper
names, rocmbench pytest tasks importing the ``performance_utils_pytest`` stub upstream
generates, task names repeated across subfolders, a ``task_type`` left to the folder,
``null`` sections, fp8 formats chosen AMD's way first, and HIP, FlyDSL, image and
repository tasks that are refused for what they are.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from aka.eval import current_workers
from aka.importers import import_agentkernelarena
from aka.importers._arena_timing import BEGIN, END
from aka.kinds._command import read_report, run_commands
from aka.tasks import load_task

UPSTREAM = Path(__file__).resolve().parent / "fixtures" / "agentkernelarena_upstream"


@pytest.fixture
def asks(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The pids that asked the evaluator's timing gate for the device, in order."""
    gate = current_workers().gate
    seen: list[int] = []
    close = gate.close
    monkeypatch.setattr(gate, "close", lambda d, pid, g: (seen.append(pid), close(d, pid, g)))
    return seen


@pytest.fixture
def upstream(tmp_path: Path, cli) -> tuple[Path, str, str]:
    root = tmp_path / "tasks"
    res = cli("tasks", "import", "aka", str(UPSTREAM), "--root", str(root), "--platform", "sm_90")
    assert res.code == 0, res.err
    return root, res.out, res.err


def test_amd_only_kernels_are_refused_with_one_line_each(upstream: tuple[Path, str, str]) -> None:
    root, out, err = upstream
    refused = [line for line in err.splitlines() if line.startswith("refused ")]
    assert len(refused) == 6  # hip2hip, torch2hip, flydsl2flydsl, HIP and image, repository
    for kind in ("hip2hip", "torch2hip", "flydsl2flydsl", "repository task in hip"):
        (line,) = [r for r in refused if f"a {kind}" in r]
        assert "AMD GPUs" in line and "fix:" in line
    assert "instructions" not in err  # hip2hip's `instructions: null` is not the reason
    assert "4 imported, 0 imported GPU-only, 6 refused" in out
    assert not (root / "command" / "agentkernelarena" / "tanh").exists()


def test_null_instructions_and_active_status_are_accepted(upstream: tuple[Path, str, str]) -> None:
    root, _, _ = upstream
    task = load_task(root / "command" / "agentkernelarena" / "triton_row_scale", root=root)
    assert task.spec.commands is not None and task.spec.commands.skip_reason is None
    assert "row_scale_kernel" in task.spec.instructions


def test_a_runner_with_its_own_events_holds_the_device_whole(
    upstream: tuple[Path, str, str],
) -> None:
    """Many upstream runners time with their own CUDA events, never calling the helper:
    their performance command holds the timing gate as a whole."""
    root, out, _ = upstream
    own = load_task(root / "command" / "agentkernelarena" / "triton_row_scale_events", root=root)
    helper = load_task(root / "command" / "agentkernelarena" / "triton_row_scale", root=root)
    assert own.spec.commands is not None and own.spec.commands.timing_gate == "command"
    assert helper.spec.commands is not None and helper.spec.commands.timing_gate == "helper"
    line = next(x for x in out.splitlines() if "triton_row_scale_events ->" in x)
    assert "the runner times with its own events" in line


def test_runner_calling_upstream_helper_names_times_with_aka(
    upstream: tuple[Path, str, str],
    copies: Callable[[Path], tuple[Path, Path]],
    asks: list[int],
) -> None:
    root, _, _ = upstream
    folder = root / "command" / "agentkernelarena" / "triton_row_scale"
    runner = (folder / "scripts" / "task_runner.py").read_text()
    block = runner.split(BEGIN, 1)[1].split(END, 1)[0]
    assert "def _benchmark_cuda_graph_or_events(" in block and "def aka_time_ms(" in block
    assert "not materialized" not in block  # the stubs that raised are gone
    assert "def _shape_label(" in block  # a helper aka does not know is kept as written
    spec = load_task(folder, root=root).spec.commands
    assert spec is not None and spec.timing_gate == "helper"
    base, cand = copies(folder)
    out = run_commands(spec, base=base, cand=cand, device="cpu", time=True, rounds=1)
    assert out["correct"], out["error"]
    # aka's helper asked for the device once per test case of each of the two runs.
    assert len(asks) == 4 and all(pid > 0 for pid in asks), asks
    times = [t["pair"] for t in out["timing"]]
    assert [t["test_case_id"] for t in times] == ["perf1", "perf2"]
    assert all(t["speedup"] > 0 for t in times)
    report = read_report(base / spec.report)
    assert all(ms > 0 for ms, _ in report.values())  # upstream's stubs made these -1.0


def test_image_and_unpinned_repository_tasks_are_refused_for_what_they_are(
    upstream: tuple[Path, str, str],
) -> None:
    """Their sources are not in the folder; the reason is the kind, not a missing file."""
    _, _, err = upstream
    image = next(x for x in err.splitlines() if "mi300x_sglang_triton_gemm" in x)
    assert "an image_kernel task" in image and "image.digest" in image
    repo = next(x for x in err.splitlines() if "aiter/pa_decode" in x)
    assert "https://github.com/ROCm/aiter.git" in repo and "repository.commit" in repo
    assert "does not exist" not in err


def test_rocmbench_tests_time_through_akas_benchmark_api(
    upstream: tuple[Path, str, str],
    copies: Callable[[Path], tuple[Path, Path]],
    asks: list[int],
) -> None:
    """A pytest task imports performance_utils_pytest, a stub upstream generates into each
    workspace: aka writes the API in its place, timed by its helper, and reads its report."""
    root, out, _ = upstream
    folder = root / "command" / "agentkernelarena" / "scale"
    assert "performance_utils_pytest.py written in place of upstream's generated stub" in out
    assert "def save_all_benchmark_results(" in (folder / "performance_utils_pytest.py").read_text()
    spec = load_task(folder, root=root).spec.commands
    assert spec is not None and spec.timing_gate == "helper"
    assert spec.report == "perf/performance_report.json"
    base, cand = copies(folder)
    res = run_commands(spec, base=base, cand=cand, device="cpu", time=True, rounds=1)
    assert res["correct"], res["error"]
    cases = sorted(t["pair"]["test_case_id"] for t in res["timing"])
    assert [c.split(",")[0] for c in cases] == [
        "scale_triton_perf[N=1024",
        "scale_triton_perf[N=512",
    ]
    assert len(asks) == 4  # two benchmarks in each of the two runs, each asked for the device
    upstream_format = json.loads((base / "perf" / "benchmark_results.json").read_text())
    assert {r["op_name"] for r in upstream_format} == {"scale_triton_perf"}
    assert all(r["gbps"] > 0 for r in upstream_format)


def test_an_instruction_task_without_sources_edits_what_its_commands_run(
    upstream: tuple[Path, str, str],
) -> None:
    root, out, _ = upstream
    task = load_task(root / "command" / "agentkernelarena" / "test_scale_stub", root=root)
    assert task.spec.editable == ["test_scale_stub.py"]
    assert task.spec.targets == ["scale_kernel", "scale_twice_kernel"]  # "a,b" upstream
    line = next(x for x in out.splitlines() if "test_scale_stub ->" in x)
    assert "no source_file_path: test_scale_stub.py (what the commands run) is editable" in line


def test_folders_sharing_a_name_in_different_subfolders_are_all_imported(
    tmp_path: Path, cli
) -> None:
    """Upstream repeats task names across subfolders (``rocmbench/hard/gemm`` and
    ``geak_eval/L3/gemm``): each is imported under a name from its path, not refused
    because the first took the folder."""
    row = UPSTREAM / "triton2triton" / "vllm" / "triton_row_scale"
    suite = tmp_path / "suite"
    for where in ("rocmbench/hard/gemm", "geak_eval/L3/gemm", "vllm/triton_row_scale"):
        shutil.copytree(row, suite / where)
    root = tmp_path / "tasks"
    res = cli("tasks", "import", "aka", str(suite), "--root", str(root), "--platform", "sm_90")
    assert res.code == 0, res.err
    assert "3 imported, 0 imported GPU-only, 0 refused" in res.out
    made = sorted(p.name for p in (root / "command" / "agentkernelarena").iterdir())
    assert made == ["geak_eval_l3_gemm", "rocmbench_hard_gemm", "triton_row_scale"]


def test_a_config_without_task_type_takes_it_from_the_folder_it_sits_in(
    tmp_path: Path, cli
) -> None:
    """Upstream keeps every task under tasks/<type>/...; a config.yaml that leaves
    task_type out is read as that type, and the import line says so. Outside such a
    folder it is refused with the two ways to fix it."""
    src = next((UPSTREAM / "triton2triton" / "vllm").iterdir())
    typed = tmp_path / "tasks" / "triton2triton" / "vllm" / src.name
    shutil.copytree(src, typed)
    cfg = yaml.safe_load((typed / "config.yaml").read_text())
    del cfg["task_type"]
    (typed / "config.yaml").write_text(yaml.safe_dump(cfg))
    res = cli("tasks", "import", "aka", str(typed), "--root", str(tmp_path / "t"),
              "--platform", "sm_90")  # fmt: skip
    assert res.code == 0, res.err
    assert (
        f"task_type triton2triton from the folder {tmp_path / 'tasks' / 'triton2triton'}" in res.out
    )
    loose = tmp_path / "loose" / src.name
    shutil.copytree(typed, loose)
    res = cli("tasks", "import", "aka", str(loose), "--root", str(tmp_path / "u"))
    assert res.code != 0
    assert "task_type" in res.err and "tasks/triton2triton/NAME" in res.err, res.err


ROW_SCALE = UPSTREAM / "triton2triton" / "vllm" / "triton_row_scale"
# Upstream's config.yaml layout, with the fields the cases below change.
ROW_SCALE_CONFIG = """source_file_path:
  - {source}

target_kernel_functions:
  - row_scale_kernel

compile_command:
  - python3 scripts/task_runner.py compile

correctness_command:
  - python3 scripts/task_runner.py correctness

performance_command:
  - python3 scripts/task_runner.py performance

task_type: {task_type}

task_result_template: null

platform_support: {platform}

prompt: {prompt}
"""


def _row_scale(where: Path, *, source: str = "source/triton_row_scale.py",
               task_type: str = "triton2triton", platform: str = "null", prompt: str = "null",
               ) -> Path:  # fmt: skip
    """Upstream's triton_row_scale task folder at ``where``, its config.yaml rewritten."""
    shutil.copytree(ROW_SCALE, where)
    (where / "config.yaml").write_text(
        ROW_SCALE_CONFIG.format(
            source=source, task_type=task_type, platform=platform, prompt=prompt
        )
    )
    return where


def test_a_dangling_link_is_refused_by_name_and_leaves_no_task_folder(tmp_path: Path, cli) -> None:
    """A link to a file that is gone (a checkout made on another machine) stopped the
    whole import with a shutil.Error traceback, and left a half-copied task that the next
    import refused as existing. Now it is one refused line naming the link, and the
    other folders import."""
    suite = tmp_path / "suite"
    broken = _row_scale(suite / "row_scale_linked")
    (broken / "source" / "common.py").symlink_to("../../shared/common.py")
    _row_scale(suite / "row_scale")
    root = tmp_path / "tasks"
    res = cli("tasks", "import", "aka", str(suite), "--root", str(root), "--platform", "sm_90")
    assert "1 imported, 0 imported GPU-only, 1 refused" in res.out, res.out + res.err
    assert "Traceback" not in res.err
    (line,) = [x for x in res.err.splitlines() if x.startswith("refused")]
    assert "source/common.py" in line and "link" in line and "fix:" in line
    assert not (root / "command" / "agentkernelarena" / "row_scale_linked").exists()


@pytest.mark.parametrize(
    ("source", "words"),
    [
        ("../shared_src/triton_row_scale.py", ["must be inside the task folder"]),
        ("/opt/kernels/triton_row_scale.py", ["must be inside the task folder"]),
        ("source", ["is a folder", "a file"]),
    ],
)
def test_sources_outside_the_folder_or_not_a_file_are_refused(
    source: str, words: list[str], tmp_path: Path, cli
) -> None:
    """A source outside the task folder imported with rc 0, and the task could not run:
    the evaluation copies the task folder only."""
    shared = tmp_path / "shared_src"
    shared.mkdir()
    (shared / "triton_row_scale.py").write_text(
        (ROW_SCALE / "source/triton_row_scale.py").read_text()
    )
    folder = _row_scale(tmp_path / "row_scale", source=source)
    res = cli("tasks", "import", "aka", str(folder), "--root", str(tmp_path / "t"))
    assert res.code == 2, res.out
    for word in [*words, "source_file_path", "fix:"]:
        assert word in res.err, res.err
    assert not (tmp_path / "t" / "command").exists()


def test_a_build_folder_inside_the_sources_is_kept(tmp_path: Path) -> None:
    """Only the top-level build/ is the runner's report folder; a package of the sources
    named build was dropped, and the task failed to import it."""
    folder = _row_scale(tmp_path / "row_scale")
    (folder / "source" / "build").mkdir()
    (folder / "source" / "build" / "consts.py").write_text("BLOCK = 128\n")
    (folder / "build").mkdir()
    (folder / "build" / "performance_report.json").write_text("[]")
    res = import_agentkernelarena(folder, tmp_path / "t", platform="sm_90")
    (dest,) = res.written
    assert (dest / "source" / "build" / "consts.py").read_text() == "BLOCK = 128\n"
    assert not (dest / "build").exists()


def test_null_sections_are_absent_sections(tmp_path: Path) -> None:
    """``prompt: null`` and ``platform_support: null`` (both optional) were refused as
    not being dictionaries."""
    folder = _row_scale(tmp_path / "row_scale", platform="null", prompt="null")
    res = import_agentkernelarena(folder, tmp_path / "t", platform="sm_90")
    spec = load_task(res.written[0], root=tmp_path / "t").spec
    assert spec.commands is not None and spec.commands.skip_reason is None
    assert "row_scale_kernel" in spec.instructions


def test_misnamed_configs_and_task_types_are_said(tmp_path: Path, cli) -> None:
    """A config.yaml passed itself, a config.yml in a folder of tasks, and a task_type
    one letter off (imported silently as a Triton task) each get a line that says what
    to change."""
    folder = _row_scale(tmp_path / "suite" / "row_scale")
    res = cli("tasks", "import", "aka", str(folder / "config.yaml"), "--root", str(tmp_path / "t"))
    assert res.code == 2 and "pass the folder holding it" in res.err, res.err
    (folder / "config.yaml").rename(folder / "config.yml")
    _row_scale(tmp_path / "suite" / "row_scale_typo", task_type="trition2triton")
    _row_scale(tmp_path / "suite" / "row_scale_ok")
    res = cli("tasks", "import", "aka", str(tmp_path / "suite"), "--root", str(tmp_path / "t"),
              "--platform", "sm_90")  # fmt: skip
    assert "1 imported, 0 imported GPU-only, 2 refused" in res.out, res.out + res.err
    refused = [x for x in res.err.splitlines() if x.startswith("refused")]
    yml = next(x for x in refused if "row_scale:" in x or x.rstrip().endswith("row_scale"))
    assert "config.yml" in yml and "rename it to config.yaml" in yml
    typo = next(x for x in refused if "row_scale_typo" in x)
    assert "'trition2triton'" in typo and "triton2triton" in typo.split("'trition2triton'")[1]


# How upstream's fp8 tasks choose a format (written here in their manner): AMD's where
# torch has it, else NVIDIA's. Torch has it on NVIDIA builds too.
FNUZ_PROBE = """

def _fp8_dtype():
    if hasattr(torch, "float8_e4m3fnuz"):
        try:
            torch.zeros(1, device="cuda", dtype=torch.float8_e4m3fnuz)
            return torch.float8_e4m3fnuz
        except Exception:
            pass
    return torch.float8_e4m3fn
"""
# The other idiom: a host tensor cast to the format, the cast itself the probe.
FNUZ_CAST = """

try:
    FP8 = torch.float8_e5m2fnuz
    torch.zeros(2).to(FP8)
except (AttributeError, RuntimeError):
    FP8 = torch.float8_e5m2
"""


# What the chosen format is then tested against, in their manner: a table from torch's
# formats to Triton's, and a clamp for AMD's narrower range. Both must keep naming AMD's
# format: renamed, the table would lose NVIDIA's entry to a duplicate key.
FNUZ_TESTS = """

TO_TRITON = {torch.float8_e4m3fn: "fp8e4nv", torch.float8_e4m3fnuz: "fp8e4b8"}


def fp8_max(dtype):
    if dtype == torch.float8_e4m3fnuz:
        return 240.0
    return float(torch.finfo(dtype).max)
"""
# The runner's reference picks its own, the same way.
RUNNER_PICK = """
REF_FP8 = torch.float8_e4m3fnuz if hasattr(torch, "float8_e4m3fnuz") else torch.float8_e4m3fn
"""


@pytest.mark.parametrize(
    ("platform", "probe", "chosen"),
    [
        ("sm_90", FNUZ_PROBE, "float8_e4m3fn"),
        ("sm_90", FNUZ_CAST, "float8_e5m2"),
        ("gfx942", FNUZ_CAST, "float8_e5m2fnuz"),
        ("cpu", FNUZ_CAST, "float8_e5m2fnuz"),
    ],
)
def test_amd_fp8_formats_chosen_become_nvidia_s_when_importing_for_nvidia(
    platform: str, probe: str, chosen: str, tmp_path: Path, cli
) -> None:
    """On an H200 every such task validated had its baseline fail (Triton's NVIDIA backend
    refuses ``fp8e4b8``): upstream's probe picks AMD's format wherever torch has it. For
    an NVIDIA platform the import renames each AMD format the task's code *chooses*
    (kernel and runner alike) and says so on the task's line; comparisons and table keys
    keep AMD's name, so they read as on a GPU without it. For AMD (and the CPU, where no
    Triton fp8 kernel compiles either way) the code is kept as it is."""
    import torch

    folder = _row_scale(tmp_path / "row_scale_fp8")
    source = folder / "source" / "triton_row_scale.py"
    source.write_text(source.read_text() + probe + FNUZ_TESTS)
    runner = folder / "scripts" / "task_runner.py"
    runner.write_text(runner.read_text() + "\nimport torch\n" + RUNNER_PICK)
    res = cli("tasks", "import", "aka", str(folder), "--root", str(tmp_path / "t"),
              "--platform", platform)  # fmt: skip
    assert res.code == 0, res.err
    (line,) = [x for x in (res.out + res.err).splitlines() if x.startswith("imported ")]
    renamed = platform.startswith("sm_")
    assert ("AMD's fp8 formats it chooses renamed to NVIDIA's" in line) is renamed, line
    assert ("source/triton_row_scale.py (" in line) is renamed, line
    assert ("scripts/task_runner.py (1)" in line) is renamed, line
    dest = tmp_path / "t" / "command" / "agentkernelarena" / "row_scale_fp8"
    text = (dest / "source" / "triton_row_scale.py").read_text()
    assert 'torch.float8_e4m3fnuz: "fp8e4b8"' in text and "dtype == torch.float8_e4m3fnuz" in text
    chosen_amd = ("return torch.float8_e4m3fnuz", "dtype=torch.float8_e4m3fnuz",
                  "FP8 = torch.float8_e5m2fnuz")  # fmt: skip
    assert any(c in text for c in chosen_amd) is not renamed
    # What the imported code picks here (the cast idiom needs no GPU; the allocation one
    # falls through to its last line on a machine without CUDA either way), and what
    # the tests of the pick then say.
    scope: dict[str, Any] = {"torch": torch}
    exec(text[text.rindex(probe.strip().splitlines()[0]) :], scope)
    picked = scope["FP8"] if "FP8" in scope else scope["_fp8_dtype"]()
    assert picked == getattr(torch, chosen)
    assert len(scope["TO_TRITON"]) == 2
    assert scope["fp8_max"](picked) == (240.0 if "fnuz" in chosen and "e4m3" in chosen
                                        else float(torch.finfo(picked).max))  # fmt: skip
    ref: dict[str, Any] = {"torch": torch}
    exec((dest / "scripts" / "task_runner.py").read_text().split("import torch\n")[-1], ref)
    assert (ref["REF_FP8"] == torch.float8_e4m3fn) is renamed
