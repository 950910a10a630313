"""The one prompt builder: what every model-driven agent is told about a task.

The prompt is a pure function of the task, the device and the self-evaluation command
(same inputs, same text), so two arms of an A/B differ only in what their configs say,
and the orchestrator can store the exact text as a blob. It says:

- what to do (the task's instructions) and where (editable files, entry point, targets);
- what is protected: only the editable files are taken from the workspace; result
  files, edited tests and harness files never reach the evaluation;
- the device sheet: facts about the H200 that set the ceilings (or the CPU interpreter);
- how to check work while going (``aka eval``), which is recorded but never scored.

Device facts come from the project's field notes (measured on this project's H200) and
the vendor's datasheet; each line says which.
"""

from __future__ import annotations

import string
from collections.abc import Mapping, Sequence

from aka.backends import BACKENDS
from aka.tasks import Task, Tolerance

__all__ = ["PROMPT_FIELDS", "build_prompt", "device_sheet", "render_prompt", "template_fields"]

PROMPT_FIELDS: Mapping[str, str] = {
    "task": "the task's name",
    "instructions": "the task's instructions",
    "editable": "the editable files, one `- path` line each",
    "targets": "the target symbols, one `- name` line each",
    "entry_file": "the file holding the entry point",
    "device": "the device scored on (cpu, cuda, cuda:N)",
    "device_sheet": "the device facts section",
    "eval_command": "the self-evaluation command, or an empty string",
    "task_section": "the standard task section (instructions, files, shapes)",
    "rules": "the standard section on what is protected",
    "default": "the whole standard prompt",
}
"""Placeholder -> meaning, for arm prompt templates (``{name}``; ``{{`` for a brace)."""

_H200 = """\
## Device: NVIDIA H200 ({device})

- Hopper, compute capability 9.0 (sm_90), 132 SMs, 141 GB of HBM3e (datasheet).
- Memory bandwidth: 4.8 TB/s on the datasheet; about 4.3 TB/s measured here for a
  device-to-device copy. That is the ceiling for a memory-bound kernel.
- Compute: dense bf16 tensor cores about 990 TFLOP/s on the datasheet, about 790 TFLOP/s
  measured here; plain fp32 about 67 TFLOP/s (datasheet).
- Below about 206 FLOP per byte (bf16) a kernel is memory-bound: most elementwise,
  reduction and normalization kernels are. Count the bytes an ideal kernel must move and
  compare your time with bytes / 4.3 TB/s.
- L2 is about 60 MB and is flushed before every timed trial: do not count on data staying
  in cache between launches.
- Per SM: up to 228 KB of shared memory (227 KB usable by one block), 64K 32-bit
  registers, 2048 resident threads; warps are 32 threads.
- A launch costs several microseconds, so on small problems fewer launches and fewer
  passes over memory matter more than fine tuning; kernels under about 10 µs are noisy.
- Triton on this chip: block sizes, `num_warps` and `num_stages` are the main knobs."""

_CPU = """\
## Device: CPU ({device})

- The candidate runs under the Triton interpreter on tiny shapes. Correctness is checked
  exactly as on a GPU; times measured here say nothing about GPU speed."""


def device_sheet(device: str) -> str:
    """Facts about the device the task is scored on (``cpu``, or a CUDA device: the H200)."""
    return (_CPU if device == "cpu" else _H200).format(device=device)


def _bullets(values: Sequence[str]) -> str:
    return "\n".join(f"- `{v}`" for v in values)


def _task_section(task: Task, device: str) -> str:
    s = task.spec
    call = f"{s.entry_symbol}(*inputs, **shape)" if s.pass_shape else f"{s.entry_symbol}(*inputs)"
    shapes = s.shapes.for_device(device)
    held = s.shapes.for_device(device, heldout=True)
    lines = [
        f"# Task: {s.name}",
        "",
        s.instructions.strip(),
        "",
        "## What to change",
        "",
        "Editable files (paths relative to the workspace root):",
        _bullets(s.editable),
        "",
        f"The evaluator imports `{s.entry_file}` and calls `{call}`; keep that signature.",
    ]
    if s.targets:
        lines += ["", "Target symbols to optimize:", _bullets(s.targets)]
    if s.tunables:
        lines += [
            "",
            f"Tunable module-level constants in `{s.entry_file}` (you may also change anything else):",
        ]
        lines += [
            f"- `{name}`: {', '.join(map(str, values))}" for name, values in s.tunables.items()
        ]
    lines += [
        "",
        f"Data types: {', '.join(s.dtypes)}; tolerances against the reference: "
        + "; ".join(f"{d} {_tolerance(t)}" for d, t in s.tolerances.items())
        + ".",
        "Shapes you may tune for: "
        + "; ".join(", ".join(f"{k}={v}" for k, v in sh.items()) for sh in shapes)
        + ".",
    ]
    if held:
        lines.append(
            f"The score also uses {len(held)} held-out shapes you are not shown: do not special-case the shapes above."
        )
    return "\n".join(lines)


def _tolerance(t: Tolerance) -> str:
    """``atol=.. rtol=..``, and the part that follows the output's scale when there is one."""
    scaled = f" + {t.rms_atol:g} x the reference output's RMS" if t.rms_atol else ""
    return f"atol={t.atol:g}{scaled} rtol={t.rtol:g}"


def _rules_section(task: Task) -> str:
    s = task.spec
    lines = [
        "## What is protected",
        "",
        "- Only the editable files listed above are taken from your workspace. The evaluator "
        "rebuilds a fresh directory from the task's own harness and reference and copies in "
        "just those files.",
        "- Anything else you change or create is ignored: result or score files you write, "
        "edited tests or harness files, extra modules (such as a `torch.py` that would shadow "
        "a library).",
        "- Outputs are compared with the reference on fresh inputs. Skipping work (caching "
        "outputs, recognizing inputs, side streams, background threads, returning lazy "
        "tensors) fails the attempt.",
    ]
    row = BACKENDS[s.backend]
    if row.must_launch:
        lines.append(
            f"- The candidate must launch a {row.label} kernel; falling back to PyTorch or a "
            "library fails."
        )
    if s.forbidden:
        lines.append(
            "- Forbidden in the candidate: " + ", ".join(f"`{f}`" for f in s.forbidden) + "."
        )
    if s.reference_visible:
        lines.append(
            f"- `{s.reference}` (the reference) is in the workspace to read; changing it changes nothing."
        )
    else:
        lines.append(
            "- The reference implementation is not in your workspace; the instructions define the task."
        )
    return "\n".join(lines)


def _eval_section(eval_command: str | None) -> str:
    if eval_command:
        return (
            "## Checking your work\n\n"
            f"Run `{eval_command}` in the workspace. It scores the current editable files and "
            "prints compile, correctness and speedup against the starting code on the shapes "
            "above. Each run is recorded as an intermediate result; none of them is your "
            "score. The final evaluation runs independently after you stop."
        )
    return (
        "## Checking your work\n\n"
        "No self-evaluation command is available in this run: test correctness yourself. "
        "The final evaluation runs independently after you stop."
    )


def build_prompt(
    task: Task, *, device: str, eval_command: str | None, extra_sections: Sequence[str] = ()
) -> str:
    """The full prompt for one attempt at ``task`` on ``device``.

    Deterministic: the same task, device, command and sections give the same text.

    Args:
        task: the loaded task.
        device: ``cpu`` or a CUDA device (``cuda``, ``cuda:0``); picks the shapes and the
            device sheet.
        eval_command: the self-evaluation command as the agent should type it
            (e.g. ``aka eval``), or None when self-evaluation is off.
        extra_sections: arm-specific text appended in order (e.g. a strategy hint).
    """
    parts = [
        _task_section(task, device),
        _rules_section(task),
        device_sheet(device),
        _eval_section(eval_command),
        "## When you are done\n\nStop. Leave the final version of the editable files in the workspace.",
        *(section.strip() for section in extra_sections if section.strip()),
    ]
    return "\n\n".join(parts) + "\n"


def template_fields(template: str) -> list[str]:
    """The placeholders a template uses, in order.

    Raises:
        ValueError: malformed braces, or a placeholder that is not in
            :data:`PROMPT_FIELDS` (attribute or index access included).
    """
    names: list[str] = []
    for _, name, _, _ in string.Formatter().parse(template):
        if name is None:
            continue
        if name not in PROMPT_FIELDS:
            raise ValueError(
                f"unknown placeholder {{{name}}}; use {', '.join('{' + f + '}' for f in PROMPT_FIELDS)}"
            )
        names.append(name)
    return names


def render_prompt(
    task: Task,
    *,
    device: str,
    eval_command: str | None,
    template: str | None = None,
    extra_sections: Sequence[str] = (),
) -> str:
    """The prompt from an arm's template (or the standard one), plus its extra sections.

    Deterministic like :func:`build_prompt`, which it equals when ``template`` is None.
    """
    if template is None:
        return build_prompt(
            task, device=device, eval_command=eval_command, extra_sections=extra_sections
        )
    template_fields(template)
    s = task.spec
    values = {
        "task": s.name,
        "instructions": s.instructions.strip(),
        "editable": _bullets(s.editable),
        "targets": _bullets(s.targets),
        "entry_file": s.entry_file,
        "device": device,
        "device_sheet": device_sheet(device),
        "eval_command": eval_command or "",
        "task_section": _task_section(task, device),
        "rules": _rules_section(task),
        "default": build_prompt(task, device=device, eval_command=eval_command).rstrip("\n"),
    }
    parts = [
        template.format_map(values).strip(),
        *(section.strip() for section in extra_sections if section.strip()),
    ]
    return "\n\n".join(parts) + "\n"
