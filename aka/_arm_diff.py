"""What differs between two resolved arms, said the way ``aka compare`` prints it.

Pure: takes two :class:`aka.treatments.ResolvedArm` values and returns every difference
from side B's point of view, plus one sentence ("arm B adds MCP server 'x' and skill
file 'skills/y.md'; everything else identical").
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import PurePosixPath
from typing import TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:
    from aka.treatments import ResolvedArm


@dataclass(frozen=True)
class ArmChange:
    """One difference: side B ``adds``/``drops``/``changes`` ``noun`` ``item``."""

    field: str
    change: Literal["adds", "drops", "changes"]
    noun: str
    item: str
    before: Any = None
    after: Any = None

    def phrase(self, *, with_verb: bool = True) -> str:
        """E.g. ``adds MCP server 'search'`` or ``changes model from 'a' to 'b'``."""
        text = f"{self.noun} {self.item}".strip()
        if self.field in (*_SCALARS, "memory"):
            if self.change == "changes":
                text += f" from {json.dumps(self.before)} to {json.dumps(self.after)}"
            elif self.change == "adds":
                text += f" {json.dumps(self.after)}"
        return f"{self.change} {text}" if with_verb else text


@dataclass(frozen=True)
class ArmDiff:
    """What side B's arm changes relative to side A's."""

    a: str
    b: str
    changes: tuple[ArmChange, ...] = field(default_factory=tuple)
    label: str = "B"

    @property
    def identical(self) -> bool:
        """Same resolved arm (same digest)."""
        return not self.changes

    def summary(self) -> str:
        """One sentence, e.g. ``arm B adds MCP server 'x' and file 'y'; everything else identical``."""
        if self.identical:
            return f"arms are identical ({self.a})"
        groups: dict[str, list[str]] = {}
        for c in self.changes:
            groups.setdefault(c.change, []).append(c.phrase(with_verb=False))
        parts = [f"{verb} {_join(items)}" for verb, items in groups.items()]
        return f"arm {self.label} {'; '.join(parts)}; everything else identical"

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form."""
        return {
            "a": self.a,
            "b": self.b,
            "identical": self.identical,
            "summary": self.summary(),
            "changes": [
                {"field": c.field, "change": c.change, "item": c.item, "a": c.before, "b": c.after}
                for c in self.changes
            ],
        }


_SCALARS = ("agent", "model", "effort", "max_iterations", "timeout_seconds")
_NOUNS = {
    "allowed_tools": "allowed tool",
    "disallowed_tools": "denied tool",
    "secret_env": "secret env",
}


def _join(items: list[str]) -> str:
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]


def _keyed(name: str, a: Mapping[str, Any], b: Mapping[str, Any], noun: str) -> list[ArmChange]:
    out = []
    for k in sorted(set(a) | set(b)):
        if k not in a:
            out.append(ArmChange(name, "adds", noun, repr(k), None, b[k]))
        elif k not in b:
            out.append(ArmChange(name, "drops", noun, repr(k), a[k], None))
        elif a[k] != b[k]:
            out.append(ArmChange(name, "changes", noun, repr(k), a[k], b[k]))
    return out


def _listed(name: str, a: list[Any], b: list[Any], noun: str, *, cut: int = 0) -> list[ArmChange]:
    """Items added and dropped; when there are none but the lists differ, their order."""
    shown = (lambda v: repr(v[:cut])) if cut else repr
    out = [ArmChange(name, "adds", noun, shown(v)) for v in b if v not in a]
    out += [ArmChange(name, "drops", noun, shown(v)) for v in a if v not in b]
    if not out and a != b:
        out.append(ArmChange(name, "changes", f"the order of {noun}s", "", a, b))
    return out


def _files(a: ResolvedArm, b: ResolvedArm) -> list[ArmChange]:
    fa = {f.path: f.model_dump() for f in a.files}
    fb = {f.path: f.model_dump() for f in b.files}
    out = _keyed("files", fa, fb, "file")
    return [
        ArmChange(c.field, c.change, _file_noun(c.before or c.after), c.item, c.before, c.after)
        for c in out
    ]


def _file_noun(f: Mapping[str, Any]) -> str:
    kind = "directory" if f["kind"] == "tree" else "file"
    return f"skill {kind}" if "skills" in PurePosixPath(str(f["path"])).parts else kind


def diff_arms(
    a: ResolvedArm, b: ResolvedArm, *, digests: tuple[str, str] = ("", ""), label: str = "B"
) -> ArmDiff:
    """Every difference between two resolved arms, from B's point of view."""
    changes: list[ArmChange] = []
    da, db = a.model_dump(mode="json"), b.model_dump(mode="json")
    for name in _SCALARS:
        if da[name] != db[name]:
            verb: Literal["adds", "drops", "changes"] = (
                "adds" if da[name] is None else "drops" if db[name] is None else "changes"
            )
            changes.append(ArmChange(name, verb, name, "", da[name], db[name]))
    changes += _keyed("options", da["options"], db["options"], "option")
    if da["prompt"]["template"] != db["prompt"]["template"]:
        ta, tb = da["prompt"]["template"], db["prompt"]["template"]
        verb = "adds" if ta is None else "drops" if tb is None else "changes"
        changes.append(ArmChange("prompt", verb, "prompt template", "", ta, tb))
    changes += _listed(
        "prompt",
        da["prompt"]["extra_sections"],
        db["prompt"]["extra_sections"],
        "prompt section",
        cut=40,
    )
    changes += _keyed("mcp_servers", da["mcp_servers"], db["mcp_servers"], "MCP server")
    changes += _files(a, b)
    changes += _keyed("env", da["env"], db["env"], "env")
    for name in ("allowed_tools", "disallowed_tools", "secret_env"):
        changes += _listed(name, da[name], db[name], _NOUNS[name])
    if da["memory"] != db["memory"]:
        ma, mb = da["memory"], db["memory"]
        verb = "adds" if ma is None else "drops" if mb is None else "changes"
        changes.append(ArmChange("memory", verb, "memory", "", ma, mb))
    return ArmDiff(a=digests[0], b=digests[1], changes=tuple(changes), label=label)
