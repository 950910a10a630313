"""The content store: blobs named by their BLAKE3 digest, and trees of blobs.

A digest is ``"b3:" + 64 hex``. Storing the same bytes twice stores them once, and a
put is temp → fsync → rename, so any number of processes (on any number of nodes
sharing the directory) may put the same blob at once. A *tree* snapshots a directory
as a manifest blob (:mod:`aka_ledger._tree`: its format and what it leaves out).
"""

from __future__ import annotations

import io
import os
import stat
import threading
from collections.abc import Iterable, Iterator
from pathlib import Path, PurePosixPath
from typing import BinaryIO

from blake3 import blake3

from aka_ledger._errors import LedgerError, MissingBlobError
from aka_ledger._fs import fsync_dir, tmp_name
from aka_ledger._tree import TreeEntry, decode_tree, encode_tree, is_litter, under, walk

PREFIX = "b3:"
_CHUNK = 16 * 1024 * 1024
_HEX = frozenset("0123456789abcdef")
_COPY_STEP = 64 * 1024 * 1024


def digest_bytes(data: bytes | memoryview) -> str:
    """The digest of ``data``."""
    return PREFIX + blake3(data, max_threads=blake3.AUTO).hexdigest()


def check_digest(digest: str) -> str:
    """Return the hex part of a well-formed digest, or raise :class:`LedgerError`."""
    hex_part = digest[3:] if isinstance(digest, str) and digest.startswith(PREFIX) else ""
    if len(hex_part) != 64 or any(ch not in "0123456789abcdef" for ch in hex_part):
        raise LedgerError(
            f"not a content digest: {digest!r}", fix="digests look like 'b3:' + 64 hex"
        )
    return hex_part


class ContentStore:
    """Blobs by digest plus trees; subclasses supply the four storage primitives."""

    # -- primitives -------------------------------------------------------------------
    def put(self, data: bytes | Path) -> str:
        """Store bytes (or a file's bytes, streamed) and return their digest."""
        raise NotImplementedError

    def open(self, digest: str) -> BinaryIO:
        """A readable binary stream of the blob; raises :class:`MissingBlobError`."""
        raise NotImplementedError

    def exists(self, digest: str) -> bool:
        """Whether the blob is stored."""
        raise NotImplementedError

    def path(self, digest: str) -> Path | None:
        """Where the blob lies on disk (``None`` for the in-memory store)."""
        return None

    def digests(self) -> Iterator[str]:
        """Every stored digest (for ``verify``)."""
        raise NotImplementedError

    # -- derived ----------------------------------------------------------------------
    def get(self, digest: str) -> bytes:
        """The blob's bytes; raises :class:`MissingBlobError`."""
        with self.open(digest) as fh:
            return fh.read()

    def hashes_right(self, digest: str) -> bool:
        """Whether the stored bytes still hash to ``digest`` (streamed)."""
        hasher = blake3(max_threads=blake3.AUTO)
        with self.open(digest) as fh:
            while chunk := fh.read(_CHUNK):
                hasher.update(chunk)
        return PREFIX + hasher.hexdigest() == digest

    def snapshot(self, directory: Path, paths: Iterable[str] | None = None) -> str:
        """Store every file under ``directory`` (or only ``paths``) and return a tree digest.

        Files matching :data:`LITTER` are left out, whether found by the walk or named
        in ``paths``.

        Args:
            directory: the directory to snapshot.
            paths: relative paths (files or directories) to restrict the snapshot to.

        Raises:
            LedgerError: the directory or one of ``paths`` does not exist.
        """
        root = Path(directory)
        if not root.is_dir():
            raise LedgerError("not a directory", path=root, fix="snapshot an existing directory")
        files = sorted({rel for rel in walk(root, paths) if not is_litter(rel)})
        entries = [self._entry(root, rel) for rel in files]
        return self.put(encode_tree(entries))

    def _entry(self, root: Path, rel: str) -> TreeEntry:
        full = root / rel
        st = full.lstat()
        if stat.S_ISLNK(st.st_mode):
            target = os.readlink(full).encode()
            return TreeEntry(rel, st.st_mode, self.put(target), len(target))
        return TreeEntry(rel, st.st_mode, self.put(full), st.st_size)

    def read_tree(self, digest: str) -> list[TreeEntry]:
        """The entries of a tree blob, sorted by path."""
        return decode_tree(self.get(digest), digest)

    def materialize(self, tree_digest: str, dest: Path, only: Iterable[str] | None = None) -> None:
        """Write the tree's files (or those under ``only``) into ``dest``, bytes and modes exact."""
        dest = Path(dest)
        wanted = None if only is None else [PurePosixPath(p).as_posix().strip("/") for p in only]
        for entry in self.read_tree(tree_digest):
            if wanted is not None and not any(under(entry.path, w) for w in wanted):
                continue
            target = dest / entry.path
            target.parent.mkdir(parents=True, exist_ok=True)
            if target.is_symlink() or target.exists():
                target.unlink()
            if stat.S_ISLNK(entry.mode):
                os.symlink(self.get(entry.digest).decode(), target)
                continue
            self._copy_out(entry.digest, target)
            os.chmod(target, stat.S_IMODE(entry.mode))

    def _copy_out(self, digest: str, target: Path) -> None:
        with self.open(digest) as src, open(target, "wb") as out:
            while chunk := src.read(_CHUNK):
                out.write(chunk)


def _copy(fin: BinaryIO, fout: BinaryIO, size: int, stop: threading.Event) -> None:
    """Kernel-side copy in steps (so ``stop`` can end it), chunked where refused."""
    done = 0
    try:
        while done < size and not stop.is_set():
            n = os.copy_file_range(fin.fileno(), fout.fileno(), min(_COPY_STEP, size - done))
            if n == 0:
                break
            done += n
        return
    except OSError:
        pass
    fin.seek(done)
    fout.seek(done)
    while not stop.is_set() and (chunk := fin.read(_CHUNK)):
        fout.write(chunk)


class MemoryContentStore(ContentStore):
    """Blobs in a dict: the test double and the in-memory backend's store."""

    def __init__(self) -> None:
        self._blobs: dict[str, bytes] = {}

    def put(self, data: bytes | Path) -> str:
        raw = Path(data).read_bytes() if isinstance(data, os.PathLike) else bytes(data)
        digest = digest_bytes(raw)
        self._blobs.setdefault(digest, raw)
        return digest

    def open(self, digest: str) -> BinaryIO:
        check_digest(digest)
        try:
            return io.BytesIO(self._blobs[digest])
        except KeyError:
            raise MissingBlobError("blob not in the content store", path=digest) from None

    def exists(self, digest: str) -> bool:
        return digest in self._blobs

    def digests(self) -> Iterator[str]:
        return iter(sorted(self._blobs))


class FileContentStore(ContentStore):
    """Blobs as files ``cas/<hex[:2]>/<hex[2:]>`` under a ledger root."""

    def __init__(self, root: Path, *, tmp_tag: str = "cas") -> None:
        self.root = Path(root)
        self._tmp_dir = self.root / "tmp"
        self._tmp_tag = tmp_tag

    def path(self, digest: str) -> Path:
        hex_part = check_digest(digest)
        return self.root / hex_part[:2] / hex_part[2:]

    def exists(self, digest: str) -> bool:
        return self.path(digest).is_file()

    def open(self, digest: str) -> BinaryIO:
        try:
            return open(self.path(digest), "rb")
        except FileNotFoundError:
            raise MissingBlobError(
                "blob not in the content store", path=self.path(digest)
            ) from None

    def put(self, data: bytes | Path) -> str:
        if isinstance(data, os.PathLike):
            return self._put_file(Path(data))
        digest = digest_bytes(data)
        if not self.exists(digest):
            self._commit(digest, lambda fh: fh.write(data))
        return digest

    def _put_file(self, src: Path) -> str:
        """Hash a file (memory-mapped, multi-threaded) while the kernel copies it in.

        Big files never pass through Python memory, and the copy and the hash run at
        once. If the blob is already stored the copy is stopped and nothing is synced,
        so re-putting a big file costs one hash. If the source changes while it is
        being stored (size or mtime moved) the put fails instead of storing bytes that
        do not match their name.
        """
        try:
            before = src.stat()
        except OSError as exc:
            raise LedgerError(f"cannot read: {exc.strerror}", path=src) from None
        if before.st_size <= _CHUNK:
            return self.put(src.read_bytes())
        tmp = self._tmp_path()
        try:
            return self._put_copy(src, before, tmp)
        except BaseException:
            tmp.unlink(missing_ok=True)
            raise

    def _put_copy(self, src: Path, before: os.stat_result, tmp: Path) -> str:
        stop = threading.Event()
        with open(src, "rb") as fin, open(tmp, "wb") as fout:
            copier = threading.Thread(target=_copy, args=(fin, fout, before.st_size, stop))
            copier.start()
            try:
                hasher = blake3(max_threads=blake3.AUTO)
                hasher.update_mmap(src)
                digest = PREFIX + hasher.hexdigest()
                if self.exists(digest):
                    stop.set()
            finally:
                copier.join()
            after = os.stat(src)
            if stop.is_set() or (after.st_size, after.st_mtime_ns) != (
                before.st_size,
                before.st_mtime_ns,
            ):
                tmp.unlink(missing_ok=True)
                if stop.is_set():
                    return digest
                raise LedgerError("file changed while being stored", path=src, fix="retry")
            fout.flush()
            os.fsync(fout.fileno())
        self._install(tmp, digest)
        return digest

    def _tmp_path(self) -> Path:
        try:
            self._tmp_dir.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise LedgerError(
                f"cannot write the content store: {exc.strerror}", path=self._tmp_dir
            ) from None
        return self._tmp_dir / tmp_name(self._tmp_tag)

    def _commit(self, digest: str, write: object) -> None:
        tmp = self._tmp_path()
        try:
            with open(tmp, "wb") as fh:
                write(fh)  # type: ignore[operator]
                fh.flush()
                os.fsync(fh.fileno())
        except BaseException:  # a full disk, a kill: no half-written temp is left behind
            tmp.unlink(missing_ok=True)
            raise
        self._install(tmp, digest)

    def _install(self, tmp: Path, digest: str) -> None:
        final = self.path(digest)
        if final.exists():
            tmp.unlink(missing_ok=True)
            return
        final.parent.mkdir(parents=True, exist_ok=True)
        os.replace(tmp, final)
        fsync_dir(final.parent)

    def digests(self) -> Iterator[str]:
        if not self.root.is_dir():
            return
        for sub in sorted(self.root.iterdir()):
            if sub.name == "tmp" or not sub.is_dir():
                continue
            for blob in sorted(sub.iterdir()):
                hex_part = sub.name + blob.name
                if len(hex_part) == 64 and set(hex_part) <= _HEX and blob.is_file():
                    yield PREFIX + hex_part
