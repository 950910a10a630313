"""AgentKernelArena folders become command-driven tasks judged by their own scripts."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest
import yaml
from hypothesis import given
from hypothesis import strategies as st

from aka.errors import InputError
from aka.importers import import_agentkernelarena
from aka.importers._agentkernelarena import PlatformSupport, skip_reason
from aka.importers._arena_timing import BEGIN, END
from aka.kinds._command import read_report, run_commands
from aka.tasks import TaskSpec, load_task

FIXTURES = Path(__file__).resolve().parent / "fixtures"
ARENA = FIXTURES / "agentkernelarena"
BROKEN = FIXTURES / "agentkernelarena_broken"


@pytest.fixture
def imported(tmp_path: Path, cli) -> Path:
    root = tmp_path / "tasks"
    res = cli("tasks", "import", "aka", str(ARENA), "--root", str(root), "--platform", "sm_90")
    assert res.code == 0, res.err
    return root


def test_folder_becomes_a_command_task(imported: Path) -> None:
    folder = imported / "command" / "agentkernelarena" / "vector_scale"
    task = load_task(folder, root=imported)
    cmds = task.spec.commands
    assert cmds is not None and cmds.skip_reason is None
    assert cmds.correctness == "python3 scripts/task_runner.py correctness"
    assert cmds.report == "build/performance_report.json"
    assert task.spec.editable == ["source/vector_scale.py"]
    assert task.spec.targets == ["scale_kernel"]
    assert "agentkernelarena:" in task.spec.origin and "vector_scale" in task.spec.origin
    runner = (folder / "scripts" / "task_runner.py").read_text()
    between = runner.split(BEGIN, 1)[1].split(END, 1)[0]
    assert "def aka_time_ms(" in between  # aka's helper sits between the markers


def test_unavailable_platform_is_imported_with_its_reason(imported: Path, cli) -> None:
    amd = load_task(imported / "command" / "agentkernelarena" / "amd_only", root=imported)
    assert amd.spec.commands is not None
    assert amd.spec.commands.skip_reason == "needs an AMD Instinct MI300 (gfx942) and ROCm"
    res = cli("tasks", "import", "aka", str(ARENA / "amd_only"), "--root", str(imported), "--force")
    assert "cannot run on this platform: needs an AMD Instinct MI300" in res.out


@pytest.mark.parametrize(
    ("ps", "platform", "skipped"),
    [
        ({}, "sm_90", False),
        ({"required_arch": "gfx942"}, "sm_90", True),
        ({"required_arch": "gfx942"}, "gfx942", False),
        ({"required_arch": "sm_90"}, "sm_80", True),
        ({"required_arch": "sm_80"}, "sm_90", False),
        ({"required_arch": "sm_90"}, "sm_100", False),
        ({"required_arch": "sm_100"}, "sm_90", True),
        ({"required_arch": "sm_90"}, "cpu", True),
        ({"status": "unsupported"}, "sm_90", True),
        ({"status": "supported", "required_arch": "sm_90"}, "sm_90", False),
    ],
)
def test_skip_reason(ps: dict[str, str], platform: str, skipped: bool) -> None:
    reason = skip_reason(PlatformSupport(**ps), platform)
    assert (reason is not None) == skipped
    if reason and "required_arch" in ps:
        assert ps["required_arch"] in reason and platform in reason


@pytest.mark.parametrize(
    ("folder", "words"),
    [
        ("bad_yaml", ["malformed YAML", "config.yaml"]),
        ("no_commands", ["correctness_command", "performance_command", "shell command"]),
        ("missing_source", ["source_file_path", "absent.py"]),
    ],
)
def test_broken_folders_get_clear_messages(
    folder: str, words: list[str], tmp_path: Path, cli
) -> None:
    res = cli("tasks", "import", "aka", str(BROKEN / folder), "--root", str(tmp_path))
    assert res.code == 2, res.out
    for word in words:
        assert word in res.err
    assert "fix:" in res.err and "Traceback" not in res.err


def test_config_files_saved_by_windows_editors_import_and_other_encodings_are_named(
    tmp_path: Path, cli
) -> None:
    """A config.yaml with a UTF-8 byte-order mark and CRLF line endings (Notepad) or in
    UTF-16 imports as the plain file does; one in Latin-1 is refused with the encoding
    named, never a traceback, and the folders beside it still import."""
    import shutil

    text = (ARENA / "vector_scale" / "config.yaml").read_text()
    text = text.replace("Optimize the Triton kernel", "Optimisé: the Triton kernel")
    variants = {
        "a_bom_crlf": b"\xef\xbb\xbf" + text.replace("\n", "\r\n").encode(),
        "b_utf16": text.encode("utf-16"),
        "c_latin1": text.encode("latin-1"),
    }
    src = tmp_path / "src"
    for name, data in variants.items():
        shutil.copytree(ARENA / "vector_scale", src / name)
        (src / name / "config.yaml").write_bytes(data)
    root = tmp_path / "tasks"
    res = cli("tasks", "import", "aka", str(src), "--root", str(root))
    assert "Traceback" not in res.err, res.err
    assert "2 imported" in res.out and "1 refused" in res.out, res.out + res.err
    (refused,) = [line for line in res.err.splitlines() if line.startswith("refused")]
    assert "c_latin1" in refused and "not UTF-8" in refused and "save the file as UTF-8" in refused
    for name in ("a_bom_crlf", "b_utf16"):
        spec = root / "command" / "agentkernelarena" / name / "task.yaml"
        assert "Optimisé: the Triton kernel" in yaml.safe_load(spec.read_text())["instructions"]


def test_links_out_of_the_folder_are_copied_and_named(tmp_path: Path, cli) -> None:
    """A task folder that links a shared helper from elsewhere imports with the helper's
    content (the task folder is all an evaluation copies) and says so on its line, link
    and target; a link inside the folder goes unmentioned."""
    import shutil

    shared = tmp_path / "shared"
    shared.mkdir()
    (shared / "helpers.py").write_text("SHARED = 1\n")
    task = tmp_path / "src" / "vector_scale"
    shutil.copytree(ARENA / "vector_scale", task)
    (task / "scripts" / "helpers.py").symlink_to(shared / "helpers.py")
    (task / "source" / "same.py").symlink_to(task / "source" / "vector_scale.py")
    root = tmp_path / "tasks"
    res = cli("tasks", "import", "aka", str(task.parent), "--root", str(root))
    assert res.code == 0, res.err
    (line,) = [ln for ln in res.out.splitlines() if ln.startswith("imported")]
    assert f"scripts/helpers.py -> {(shared / 'helpers.py').resolve()}" in line, line
    assert "same.py" not in line
    copied = root / "command" / "agentkernelarena" / "vector_scale" / "scripts" / "helpers.py"
    assert not copied.is_symlink() and copied.read_text() == "SHARED = 1\n"


def test_commands_block_fills_unused_fields_and_rejects_unknown_keys() -> None:
    base = {
        "name": "t", "type": "x", "instructions": "i", "backend": "cuda", "editable": ["k.py"],
        "entry": "k.py:f", "commands": {"compile": "a", "correctness": "b", "performance": "c"},
    }  # fmt: skip
    spec = TaskSpec.model_validate(base)
    assert spec.devices == ["cuda"] and spec.dtypes == ["float32"]
    with pytest.raises(ValueError, match="extra"):
        TaskSpec.model_validate({**base, "commands": {**base["commands"], "bogus": 1}})  # type: ignore[dict-item]


def test_run_commands_scores_and_times(
    imported: Path, copies: Callable[[Path], tuple[Path, Path]]
) -> None:
    folder = imported / "command" / "agentkernelarena" / "vector_scale"
    spec = load_task(folder, root=imported).spec.commands
    assert spec is not None
    base, cand = copies(folder)
    good = run_commands(spec, base=base, cand=cand, device="cpu", time=True, rounds=1)
    assert good["compiled"]["ok"] and good["correct"], good["error"]
    assert [t["pair"]["test_case_id"] for t in good["timing"]] == ["case0", "case1"]
    assert all(t["pair"]["speedup"] > 0 for t in good["timing"])
    assert good["timing"][1]["shape"] == {"case": 1, "n": 4096}
    kernel = cand / "source" / "vector_scale.py"
    kernel.write_text(kernel.read_text().replace("alpha * x + beta", "alpha * x - beta"))
    bad = run_commands(spec, base=base, cand=cand, device="cpu", time=True, rounds=1)
    assert bad["compiled"]["ok"] and not bad["correct"] and not bad["timing"]
    assert "mismatch" in bad["error"]


def test_skipped_task_runs_nothing(
    imported: Path, copies: Callable[[Path], tuple[Path, Path]]
) -> None:
    folder = imported / "command" / "agentkernelarena" / "amd_only"
    spec = load_task(folder, root=imported).spec.commands
    assert spec is not None
    base, cand = copies(folder)
    out = run_commands(spec, base=base, cand=cand, device="cpu", time=True)
    assert out["compiled"] is None and not out["correct"]
    assert "gfx942" in out["error"]


@given(
    st.lists(
        st.tuples(st.text(min_size=1, max_size=5), st.floats(1e-6, 1e6)), min_size=1, max_size=5
    )
)
def test_report_round_trip(items: list[tuple[str, float]]) -> None:
    import tempfile

    entries = [
        {"test_case_id": k, "execution_time_ms": v, "params": {"i": i}}
        for i, (k, v) in enumerate(items)
    ]
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "r.json"
        path.write_text(json.dumps(entries))
        got = read_report(path)
    last = {k: (v, {"i": i}) for i, (k, v) in enumerate(items)}
    assert got == last


@pytest.mark.parametrize(
    "text",
    ["", "{}", "[]", '[{"test_case_id": 1}]', '[{"test_case_id": 1, "execution_time_ms": -1}]'],
)
def test_bad_reports_are_named(text: str, tmp_path: Path) -> None:
    path = tmp_path / "performance_report.json"
    path.write_text(text)
    with pytest.raises(ValueError, match=r"performance_report\.json"):
        read_report(path)


def test_import_api_matches_cli(tmp_path: Path) -> None:
    res = import_agentkernelarena(ARENA / "vector_scale", tmp_path, platform="sm_90")
    assert [p.name for p in res.written] == ["vector_scale"]
    spec = yaml.safe_load((res.written[0] / "task.yaml").read_text())
    assert spec["commands"]["performance"].endswith("performance")
    with pytest.raises(InputError, match=r"no config\.yaml"):
        (tmp_path / "empty").mkdir()
        import_agentkernelarena(tmp_path / "empty", tmp_path / "other")


@given(st.lists(st.sampled_from(["a", "b", "A", "a-b", "a_b", "x/a", "y/a", "x/y/a"]),
                min_size=1, max_size=8, unique=True))  # fmt: skip
def test_unique_names_never_repeat_and_keep_a_lone_name(rels: list[str]) -> None:
    from aka.importers._common import slug, unique_names

    base = Path("/suite")
    paths = [base / r for r in rels]
    names = unique_names(paths, base, lambda p: p.name)
    assert len(set(names.values())) == len(paths)
    for p in paths:
        if sum(slug(q.name) == slug(p.name) for q in paths) == 1:
            assert names[p] == slug(p.name)
