"""Run keys: the secret that lets the arena's own processes, and no one else, record outcomes.

Every run gets a random 32-byte key when it starts, in a file outside the ledger
directory (``$AKA_KEY_DIR``, else ``$XDG_STATE_HOME/aka/keys``, else
``~/.local/state/aka/keys``; the directory is created ``0700``, each key ``0600``). The
events that decide an attempt's outcome (:data:`AUTHORITY_TYPES`) are appended with a
MAC under that key (:class:`aka_ledger.Authority`), and every read drops those that fail
it: a ``Scored`` forged through the public ledger API, or a live log made by hand in a
new writer folder, counts nowhere. Agents get no ``AKA_*`` variable, so the key
directory's location is not handed to them; an agent running as the same user can still
read the default location, which is why the threat model (docs/security.md) asks for a
separate user or sandbox where that matters.
"""

from __future__ import annotations

import os
import secrets
import stat
from collections.abc import Callable
from pathlib import Path

from aka.errors import InputError
from aka.runlock import RUN_ID_RE
from aka_ledger import KEY_BYTES, Authority, Ledger, Rejected

__all__ = [
    "AUTHORITY_TYPES",
    "KEY_DIR_ENV",
    "arena_authority",
    "create_run_key",
    "key_dir",
    "read_run_key",
    "with_authority",
]

KEY_DIR_ENV = "AKA_KEY_DIR"
AUTHORITY_TYPES = frozenset(
    {"RunStarted", "Scored", "Compiled", "CorrectnessChecked", "KernelTimed", "AttemptFinished"}
)
"""The events that decide outcomes, and ``RunStarted`` (it holds the ledger's high-water
marks, which must not be rewritten to hide a deletion): only processes holding the run's
key may write them."""


def key_dir() -> Path:
    """Where run keys live: never inside a ledger directory."""
    if env := os.environ.get(KEY_DIR_ENV):
        return Path(env)
    state = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    return Path(state) / "aka" / "keys"


def _key_path(run_id: str) -> Path | None:
    return key_dir() / f"{run_id}.key" if RUN_ID_RE.fullmatch(run_id) else None


def create_run_key(run_id: str) -> bytes:
    """The run's key, created (``0600``) if it does not exist yet.

    Raises:
        InputError: the key directory cannot be created or written.
    """
    path = _key_path(run_id)
    if path is None:
        raise InputError(f"invalid run id {run_id!r}", fix="use a safe run id")
    try:
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        key = read_run_key(run_id)
        assert key is not None
        return key
    except OSError as exc:
        raise InputError(
            f"cannot create the run key: {exc.strerror or exc}",
            where=str(path),
            fix=f"make {key_dir()} writable, or point {KEY_DIR_ENV} at a private directory",
        ) from None
    key = secrets.token_bytes(KEY_BYTES)
    try:
        os.write(fd, key)
        os.fsync(fd)
    finally:
        os.close(fd)
    return key


def read_run_key(run_id: str) -> bytes | None:
    """The run's key, or None where this machine has none (an older run, another host).

    Raises:
        InputError: the key file is readable by others, or is not a key.
    """
    path = _key_path(run_id)
    if path is None:
        return None
    try:
        fd = os.open(path, os.O_RDONLY)
    except FileNotFoundError:
        return None
    try:
        mode = os.fstat(fd).st_mode
        data = os.read(fd, KEY_BYTES + 1)
    finally:
        os.close(fd)
    if mode & (stat.S_IRWXG | stat.S_IRWXO):
        raise InputError(
            "run key is readable by other users",
            where=str(path),
            fix=f"chmod 600 {path}",
        )
    if len(data) < KEY_BYTES:  # being written by create_run_key this instant
        return None
    if len(data) != KEY_BYTES:
        raise InputError("not a run key", where=str(path), fix="restore the run's key file")
    return data


class _KeyRing:
    """Keys by run id, read once per process (a missing one is looked up again)."""

    def __init__(self) -> None:
        self._keys: dict[str, bytes] = {}

    def __call__(self, run_id: str) -> bytes | None:
        key = self._keys.get(run_id)
        if key is None and (key := read_run_key(run_id)) is not None:
            self._keys[run_id] = key
        return key


def arena_authority(
    *, sign: bool, on_reject: Callable[[list[Rejected]], None] | None = None
) -> Authority:
    """The arena's authority: :data:`AUTHORITY_TYPES` under each run's key."""
    return Authority(AUTHORITY_TYPES, _KeyRing(), sign=sign, on_reject=on_reject)


def with_authority(ledger: Ledger) -> Ledger:
    """Give a ledger opened without one the arena's signing authority (the core's writes).

    The orchestrator and the evaluator call this on the ledger they are handed, so the
    outcome events they append are MACed however the caller opened it.
    """
    if ledger.authority is None:
        ledger.authority = arena_authority(sign=True)
    return ledger
