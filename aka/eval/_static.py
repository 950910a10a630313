"""Static checks on candidate sources, each reported as a flag with the offending line.

Two families: :func:`forbidden_uses` (the task's own forbidden list, e.g. ``torch.softmax``)
and :func:`hack_findings` (what no candidate needs: fallbacks in ``except`` handlers,
subprocesses, threads, ctypes, network, reading files or the environment, introspection,
dynamic code, monkeypatching timers or library internals, reaching for the harness, and in
Triton kernel bodies what only the interpreter has: :mod:`aka.eval._jitbody`).
Import aliases are resolved (``import torch.nn.functional as F`` then ``F.softmax``) so
the usual spellings are caught without running anything. Static checks are a tripwire,
not a boundary: the runtime guards in the evaluation child back them up.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from aka import pyast
from aka.eval import _jitbody
from aka.pyast import dotted_name, import_aliases, resolve


@dataclass(frozen=True)
class Finding:
    """One static finding: which detector, and where."""

    flag: str
    path: str
    line: int
    detail: str

    def evidence(self) -> str:
        """``path:line: detail``, the form stored in events."""
        return f"{self.path}:{self.line}: {self.detail}"


# Module (prefix) -> flag: importing or using any of these is a finding.
BANNED_MODULES: dict[str, str] = {
    "ctypes": "ctypes",
    "cffi": "ctypes",
    "numpy.ctypeslib": "ctypes",  # ctypes itself, as an attribute
    "subprocess": "subprocess",
    "multiprocessing": "subprocess",
    "pty": "subprocess",
    # what ``subprocess`` and ``os`` call underneath: a process started through
    # ``_posixsubprocess.fork_exec`` raises no audit event (a red-team tap did that)
    "_posixsubprocess": "subprocess",
    "posix": "subprocess",
    "threading": "threads",
    "_thread": "threads",
    "concurrent": "threads",
    "asyncio": "threads",
    "socket": "network",
    "urllib": "network",
    "http": "network",
    "requests": "network",
    "gc": "introspection",
    "inspect": "introspection",
    "importlib": "introspection",
    "builtins": "introspection",
    # what compiles source for its caller under a name of its choosing: code the sealed
    # core's sentry cannot tell from a library's (its own compile and exec it sees)
    "timeit": "dynamic_code",
    "codeop": "dynamic_code",
    "code": "dynamic_code",
    "runpy": "dynamic_code",
    "pickle": "file_access",
    "shutil": "file_access",
    "aka": "harness_access",
    "aka_ledger": "harness_access",
    "aka_reference": "harness_access",
    "aka_baseline": "harness_access",
    "aka_candidate": "harness_access",  # the loaded entry module (an e2e task's model)
    "reference": "harness_access",
}
# ``os`` functions that read, write or make descriptors past ``open`` (a red-team tap read
# the input drawer's pipes through descriptors it reopened).
RAW_IO = (
    "readv", "writev", "pread", "pwrite", "preadv", "pwritev", "splice", "sendfile",
    "copy_file_range", "fdopen", "dup", "pipe", "pipe2", "mkfifo", "memfd_create", "openpty",
)  # fmt: skip
# Dotted names (after alias resolution) -> flag.
BANNED_NAMES: dict[str, str] = {
    "os.system": "subprocess",
    "os.popen": "subprocess",
    "os.fork": "subprocess",
    "os.forkpty": "subprocess",
    "os.posix_spawn": "subprocess",
    "os.posix_spawnp": "subprocess",
    "os.kill": "subprocess",
    "os.killpg": "subprocess",
    "os.vfork": "subprocess",
    "os.register_at_fork": "subprocess",
    "os.pidfd_open": "subprocess",
    **{f"os.exec{v}": "subprocess" for v in ("l", "le", "lp", "lpe", "v", "ve", "vp", "vpe")},
    **{f"os.spawn{v}": "subprocess" for v in ("l", "le", "lp", "lpe", "v", "ve", "vp", "vpe")},
    "os.environ": "env_access",
    "os.environb": "env_access",
    "os.getenv": "env_access",
    "os.putenv": "env_access",
    "os.unsetenv": "env_access",
    "os.open": "file_access",
    "os.read": "file_access",
    "os.write": "file_access",
    "os.dup2": "file_access",
    **{f"os.{name}": "file_access" for name in RAW_IO},
    "os.listdir": "file_access",
    "os.scandir": "file_access",
    "io.open": "file_access",
    "torch.load": "file_access",
    "torch.save": "file_access",
    "sys.modules": "introspection",
    "sys._getframe": "introspection",
    "sys.settrace": "monkeypatch",
    "sys.setprofile": "monkeypatch",
    "sys.addaudithook": "monkeypatch",
    "torch.set_float32_matmul_precision": "precision_downgrade",
    "torch.backends": "precision_downgrade",
    "torch.set_default_dtype": "precision_downgrade",
}
BANNED_BUILTINS = {
    "exec": "dynamic_code",
    "eval": "dynamic_code",
    "compile": "dynamic_code",
    "__import__": "dynamic_code",
    "globals": "introspection",
    "vars": "introspection",
    "__builtins__": "introspection",
    "open": "file_access",
    "breakpoint": "introspection",
}
# Attributes that lead from a candidate's own objects into the harness's (a caught
# exception's frame, then its caller's locals: red-team files reached the sealed core's
# ``launched`` and the input drawer's pipes that way, past ``sys._getframe``) or rewrite
# code in place (a function's closure cells, its code, its globals). Read, written, or
# named to ``getattr`` and its kin.
INTROSPECTION_ATTRS = frozenset({
    "f_back", "f_locals", "f_globals", "f_builtins", "f_code", "tb_frame", "tb_next",
    "gi_frame", "gi_code", "cr_frame", "cr_code", "ag_frame", "ag_code", "__traceback__",
    "__closure__", "cell_contents", "__globals__", "__code__", "__subclasses__",
})  # fmt: skip
ATTR_FUNCTIONS = {"getattr", "setattr", "hasattr", "delattr"}
# Assigning to attributes under these modules is monkeypatching.
PATCH_ROOTS = {
    "time", "torch", "triton", "aka", "statistics", "numpy", "builtins", "sys", "os",
    "gc", "math", "random", "functools", "importlib", "threading", "timeit",
}  # fmt: skip
# Environment variables a kernel may read (the interpreter switch, device selection).
ENV_ALLOWED_PREFIXES = ("TRITON_", "CUDA_")
FILE_METHODS = {"read_text", "read_bytes", "write_text", "write_bytes", "open", "unlink"}


def forbidden_uses(path: str, source: str, forbidden: Iterable[str]) -> list[Finding]:
    """Uses of any forbidden dotted name in ``source`` (after alias resolution).

    A method form is caught too: ``torch.Tensor.softmax`` forbids ``x.softmax(...)``.
    """
    banned = set(forbidden)
    if not banned:
        return []
    try:
        tree = pyast.parse(source)
    except SyntaxError:
        return []  # the compile stage reports syntax errors
    aliases = import_aliases(tree)
    methods = {b.rsplit(".", 1)[1] for b in banned if b.startswith("torch.Tensor.")}
    found: list[Finding] = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Attribute | ast.Name):
            continue
        dotted = dotted_name(node)
        if dotted is None:
            continue
        head = dotted.partition(".")[0]
        full = resolve(dotted, aliases)
        if full in banned:
            found.append(Finding("forbidden_api", path, getattr(node, "lineno", 0), f"uses {full}"))
        elif isinstance(node, ast.Attribute) and node.attr in methods and head not in aliases:
            found.append(
                Finding("forbidden_api", path, node.lineno, f"calls .{node.attr}() (forbidden)")
            )
    unique = {(f.path, f.line, f.detail): f for f in found}
    return list(unique.values())


def _module_flag(module: str) -> str | None:
    parts = module.split(".")
    for k in range(len(parts), 0, -1):
        flag = BANNED_MODULES.get(".".join(parts[:k]))
        if flag:
            return flag
    return None


# Read-only questions about the machine under ``torch.backends`` (``cudnn.is_available()``):
# they change no precision, and honest kernels ask them to choose a path.
BACKEND_QUERIES = frozenset({"is_available", "is_built", "get_cpu_capability", "version"})


def _name_flag(full: str) -> str | None:
    parts = full.split(".")
    for k in range(len(parts), 1, -1):
        flag = BANNED_NAMES.get(".".join(parts[:k]))
        if flag:
            return flag
    return None


class _Visitor(ast.NodeVisitor):
    """One pass over a module collecting findings; see :func:`hack_findings`."""

    def __init__(self, path: str, aliases: dict[str, str], editable: Sequence[str]):
        self.path = path
        self.aliases = aliases
        self.editable = {e.rsplit("/", 1)[-1] for e in editable}
        self.found: list[Finding] = []

    def add(self, flag: str, node: ast.AST, detail: str) -> None:
        self.found.append(Finding(flag, self.path, getattr(node, "lineno", 0), detail))

    def visit_Import(self, node: ast.Import) -> None:
        for a in node.names:
            flag = _module_flag(a.name)
            if flag:
                self.add(flag, node, f"imports {a.name}")

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        mod = node.module or ""
        flag = _module_flag(mod) if node.level == 0 else None
        for a in node.names:
            flag = flag or _name_flag(f"{mod}.{a.name}") or _module_flag(f"{mod}.{a.name}")
        if node.level and mod in {"reference", "aka_reference", "aka_baseline"}:
            flag = "harness_access"
        if flag:
            self.add(flag, node, f"imports from {'.' * node.level}{mod}")

    def visit_Name(self, node: ast.Name) -> None:
        flag = BANNED_BUILTINS.get(node.id)
        if flag and node.id not in self.aliases:
            self.add(flag, node, f"uses builtin {node.id}")

    def visit_Attribute(self, node: ast.Attribute) -> None:
        if node.attr in INTROSPECTION_ATTRS:
            self.add("introspection", node, f"uses .{node.attr}")
        elif node.attr in {"ctypes", "ctypeslib"}:  # numpy's way to ctypes and raw pointers
            self.add("ctypes", node, f"uses .{node.attr}")
        dotted = dotted_name(node)
        if dotted is not None:
            full = resolve(dotted, self.aliases)
            parts = full.split(".")
            if parts[:2] == ["torch", "backends"] and parts[-1] in BACKEND_QUERIES:
                return  # a question about the machine, not a switch
            flag = _name_flag(full)
            if flag:
                self.add(flag, node, f"uses {full}")
                return  # the outermost match is enough
        if (
            node.attr in FILE_METHODS
            and isinstance(node.ctx, ast.Load)
            and not self._names_editable(node.value)
        ):
            self.add("file_access", node, f"calls .{node.attr}() on a path")
        self.generic_visit(node)

    def _names_editable(self, node: ast.AST) -> bool:
        """Whether a string literal in ``node`` names one of the editable files."""
        return any(
            isinstance(n, ast.Constant) and isinstance(n.value, str) and n.value in self.editable
            for n in ast.walk(node)
        )

    def _patch_target(self, target: ast.AST) -> None:
        if isinstance(target, ast.Attribute):
            dotted = dotted_name(target)
            full = resolve(dotted, self.aliases) if dotted else ""
            if (
                full.split(".")[0] in PATCH_ROOTS
                and dotted
                and dotted.split(".")[0] in self.aliases
            ):
                flag = "precision_downgrade" if full.startswith("torch.backends") else "monkeypatch"
                self.add(flag, target, f"assigns {full}")
        elif isinstance(target, ast.Tuple | ast.List):
            for t in target.elts:
                self._patch_target(t)

    def visit_Assign(self, node: ast.Assign) -> None:
        for t in node.targets:
            self._patch_target(t)
        self.generic_visit(node)

    def visit_AugAssign(self, node: ast.AugAssign) -> None:
        self._patch_target(node.target)
        self.generic_visit(node)

    def visit_Delete(self, node: ast.Delete) -> None:
        for t in node.targets:
            self._patch_target(t)
        self.generic_visit(node)

    def _allowed_env_read(self, func: ast.AST, key: ast.AST | None) -> bool:
        dotted = dotted_name(func)
        full = resolve(dotted, self.aliases) if dotted else ""
        return (
            full in {"os.environ.get", "os.getenv", "os.environ"}
            and isinstance(key, ast.Constant)
            and isinstance(key.value, str)
            and key.value.startswith(ENV_ALLOWED_PREFIXES)
        )

    def visit_Subscript(self, node: ast.Subscript) -> None:
        if isinstance(node.ctx, ast.Load) and self._allowed_env_read(node.value, node.slice):
            return
        self.generic_visit(node)

    def visit_Call(self, node: ast.Call) -> None:
        if self._allowed_env_read(node.func, node.args[0] if node.args else None):
            return
        func = node.func.id if isinstance(node.func, ast.Name) else ""
        if func in ATTR_FUNCTIONS and len(node.args) > 1:
            name = _folded(node.args[1]) or ""
            flag = (
                "introspection"
                if name in INTROSPECTION_ATTRS
                else "ctypes"
                if name in {"ctypes", "ctypeslib"}
                else _name_flag(f"os.{name}")  # ``getattr(os, "fo" + "rk")``
            )
            if flag:
                self.add(flag, node, f"{func}() of .{name}")
        if func in {"setattr", "delattr"} and node.args:
            dotted = dotted_name(node.args[0]) or ""
            root = resolve(dotted, self.aliases).split(".")[0] if dotted else ""
            if root in PATCH_ROOTS and dotted.split(".")[0] in self.aliases:
                self.add("monkeypatch", node, f"{func}() on {dotted}")
        if func == "open" and node.args and self._names_editable(node.args[0]):
            for arg in node.args[1:]:
                self.visit(arg)
            return
        self.generic_visit(node)

    def visit_Try(self, node: ast.Try) -> None:
        for handler in node.handlers:
            body = ast.Module(body=handler.body, type_ignores=[])
            acts = [n for n in ast.walk(body) if isinstance(n, ast.Call | ast.Return)]
            if acts:
                what = "returns" if isinstance(acts[0], ast.Return) else "calls code"
                self.add("fallback", handler, f"except handler {what} (a fallback path)")
        self.generic_visit(node)

    visit_TryStar = visit_Try  # type: ignore[assignment]


def _folded(node: ast.AST) -> str | None:
    """A name spelled as string constants joined by ``+`` (``"cty" + "pes"``, the way a
    red-team file hid ``ctypes`` from a literal match), else None."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        left, right = _folded(node.left), _folded(node.right)
        return None if left is None or right is None else left + right
    if isinstance(node, ast.JoinedStr) and all(isinstance(v, ast.Constant) for v in node.values):
        return "".join(str(v.value) for v in node.values if isinstance(v, ast.Constant))
    return None


def hack_findings(path: str, source: str, editable: Sequence[str] = ()) -> list[Finding]:
    """Findings of every hack detector on one candidate source file.

    Args:
        path: the file's path relative to the source folder (for evidence).
        source: its text.
        editable: the task's editable files; reading one of them (a CUDA task's
            ``kernel.cu``) is not a finding.
    """
    try:
        tree = pyast.parse(source)
    except SyntaxError:
        return []
    aliases = import_aliases(tree)
    visitor = _Visitor(path, aliases, editable)
    visitor.visit(tree)
    for node, detail in _jitbody.findings(tree, aliases):
        visitor.add(_jitbody.FLAG, node, detail)
    unique = {(f.flag, f.line): f for f in visitor.found}
    return sorted(unique.values(), key=lambda f: (f.line, f.flag))
