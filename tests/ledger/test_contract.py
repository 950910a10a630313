"""The ledger contract, run against both backends (file-backed and in-memory)."""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import Any, Literal

import pytest
from blake3 import blake3
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from ledger_vocab import EVENTS, ITEMS, REGISTRY, Counted, Opened, Renamed, Stored, fold

from aka_ledger import (
    EventModel,
    EventRegistry,
    Ledger,
    LedgerError,
    MissingBlobError,
    SchemaError,
)

HYP = settings(
    max_examples=20,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.differing_executors],
)


class LedgerContract:
    """Behaviour every backend must show; subclasses say how to make and reopen one."""

    def make(self, tmp_path: Path, registry: EventRegistry = REGISTRY) -> Ledger:
        raise NotImplementedError

    def reopen(self, ledger: Ledger, registry: EventRegistry) -> Ledger:
        raise NotImplementedError

    @given(items=ITEMS)
    @HYP
    def test_every_event_type_round_trips(self, tmp_path_factory: Any, items: list) -> None:
        ledger = self.make(tmp_path_factory.mktemp("l"))
        appended = ledger.append_many(items)
        read = ledger.events()
        assert [e.payload for e in read] == [ev for ev, _, _ in items]
        assert read == appended
        assert [e.seq for e in read] == list(range(len(items)))
        for env, (event, run_id, attempt) in zip(read, items, strict=True):
            assert (env.run_id, env.attempt_key, env.type) == (run_id, attempt, event.type)
            assert env.version == type(event).schema_version
            assert env.digests == event.digests()
            assert env.time.utcoffset() is not None
        ledger.close()

    @given(items=ITEMS)
    @HYP
    def test_filters_match_filtering_everything(self, tmp_path_factory: Any, items: list) -> None:
        ledger = self.make(tmp_path_factory.mktemp("l"))
        ledger.append_many(items)
        every = ledger.events()
        for run in ("run-a", "run-b"):
            assert ledger.events(run_id=run) == [e for e in every if e.run_id == run]
        kinds = {"Opened", "Counted"}
        assert ledger.events(types=kinds) == [e for e in every if e.type in kinds]
        assert ledger.run_ids() == sorted({e.run_id for e in every})
        ledger.close()

    @given(chunks=st.lists(ITEMS, max_size=5))
    @HYP
    def test_incremental_read_equals_full_read(self, tmp_path_factory: Any, chunks: list) -> None:
        ledger = self.make(tmp_path_factory.mktemp("l"))
        seen: list = []
        state: dict[str, int] = {}
        for chunk in chunks:
            ledger.append_many(chunk, durable=bool(len(chunk) % 2))
            now = ledger.events()
            assert now[: len(seen)] == seen, "a read is a prefix of every later read"
            new = now[len(seen) :]
            state = _continue_fold(state, new)
            seen = now
        assert ledger.events() == seen
        assert state == fold(seen)
        ledger.close()

    @given(items=st.lists(st.tuples(EVENTS, st.just("run-a"), st.none()), max_size=20))
    @HYP
    def test_folding_the_same_events_gives_the_same_state(
        self, tmp_path_factory: Any, items: list
    ) -> None:
        ledger = self.make(tmp_path_factory.mktemp("l"))
        ledger.append_many(items)
        first = fold(ledger.events())
        ledger.seal()
        again = self.reopen(ledger, REGISTRY)
        assert fold(again.events()) == first
        assert [e.event_id for e in again.events()] == [e.event_id for e in ledger.events()]
        again.close()

    def test_single_appends_are_sequenced_and_durable_ones_readable(self, tmp_path: Path) -> None:
        ledger = self.make(tmp_path)
        envs = [
            ledger.append(Counted(key="a", by=i), run_id="r", attempt_key="k", durable=i % 2 == 0)
            for i in range(10)
        ]
        assert [e.seq for e in envs] == list(range(10))
        assert len({e.event_id for e in envs}) == 10
        times = [e.time for e in ledger.events()]
        assert times == sorted(times)
        ledger.sync()
        assert ledger.events() == envs
        ledger.close()

    def test_unregistered_event_is_refused_and_nothing_written(self, tmp_path: Path) -> None:
        class Alien(EventModel):
            type: Literal["Alien"] = "Alien"

        ledger = self.make(tmp_path)
        with pytest.raises(LedgerError, match="not registered"):
            ledger.append_many([(Opened(name="x"), "r", None), (Alien(), "r", None)])
        assert ledger.events() == []
        ledger.close()

    def test_old_versions_are_upcast_on_read(self, tmp_path: Path) -> None:
        old = EventRegistry([_renamed_v1_model()])
        ledger = self.make(tmp_path, old)
        ledger.append(_renamed_v1_model()(old="a"), run_id="r")
        ledger.seal()
        new = self.reopen(ledger, REGISTRY)
        [env] = new.events()
        assert env.payload == Renamed(previous="a", name="a")
        assert env.version == 1
        new.close()

    def test_newer_version_is_a_schema_error(self, tmp_path: Path) -> None:
        ledger = self.make(tmp_path, EventRegistry([_renamed_v3_model()]))
        ledger.append(_renamed_v3_model()(previous="a", name="b", extra=1), run_id="r")
        ledger.seal()
        reader = self.reopen(ledger, REGISTRY)
        with pytest.raises(SchemaError, match="newer aka"):
            reader.events()
        assert any("newer" in p.message for p in reader.verify())
        reader.close()

    def test_unknown_type_on_read_is_a_schema_error(self, tmp_path: Path) -> None:
        ledger = self.make(tmp_path)
        ledger.append(Opened(name="x"), run_id="r")
        ledger.seal()
        reader = self.reopen(ledger, EventRegistry())
        with pytest.raises(SchemaError, match="unknown event type 'Opened'"):
            reader.events()
        assert [p.message for p in reader.verify() if "unknown" in p.message]
        reader.close()

    @given(items=ITEMS, batch=st.integers(min_value=1, max_value=7), split=st.booleans())
    @HYP
    def test_iterating_in_batches_equals_the_full_list(
        self, tmp_path_factory: Any, items: list, batch: int, split: bool
    ) -> None:
        ledger = self.make(tmp_path_factory.mktemp("l"))
        half = len(items) // 2
        ledger.append_many(items[:half])
        if split:  # some events sealed, the rest only in the live log
            ledger.seal()
        ledger.append_many(items[half:])
        assert list(ledger.iter_events(batch=batch)) == ledger.events()
        assert list(ledger.iter_events(run_id="r", batch=batch)) == ledger.events(run_id="r")
        with pytest.raises(ValueError, match="batch"):
            next(ledger.iter_events(batch=0))
        ledger.close()

    def test_iterating_names_the_bad_row_after_the_good_batches(self, tmp_path: Path) -> None:
        ledger = self.make(tmp_path)
        ledger.append_many([(Counted(key=k, by=1), "r", None) for k in "abc"])
        ledger.append(Opened(name="x"), run_id="r")
        ledger.seal()
        registry = EventRegistry()
        registry.register(Counted)
        reader = self.reopen(ledger, registry)
        it = reader.iter_events(batch=3)
        assert [e.payload.key for e in (next(it), next(it), next(it))] == ["a", "b", "c"]
        with pytest.raises(SchemaError, match="unknown event type 'Opened'"):
            next(it)
        reader.close()

    def test_connect_sees_every_event_once(self, tmp_path: Path) -> None:
        ledger = self.make(tmp_path)
        ledger.append_many([(Counted(key=k, by=1), "r", None) for k in "aabbbc"])
        ledger.seal()
        ledger.append(Opened(name="live"), run_id="r2", durable=True)
        con = ledger.connect()
        rows = con.sql("SELECT type, count(*) FROM events GROUP BY type ORDER BY type").fetchall()
        assert rows == [("Counted", 6), ("Opened", 1)]
        assert con.sql(
            "SELECT json_extract_string(payload, '$.key') k, count(*) FROM events "
            "WHERE type = 'Counted' GROUP BY k ORDER BY k"
        ).fetchall() == [("a", 2), ("b", 3), ("c", 1)]
        types = dict(
            con.sql("DESCRIBE events").fetchall()
            and [(r[0], r[1]) for r in con.sql("DESCRIBE events").fetchall()]
        )
        assert types["time"] == "TIMESTAMP WITH TIME ZONE"
        assert types["digests"] == "VARCHAR[]"
        ledger.close()

    def test_verify_is_clean_then_names_a_missing_blob(self, tmp_path: Path) -> None:
        ledger = self.make(tmp_path)
        digest = ledger.cas.put(b"artifact")
        ledger.append(Stored(digest=digest), run_id="r", durable=True)
        assert ledger.verify() == []
        missing = "b3:" + blake3(b"never stored").hexdigest()
        ledger.append(Stored(digest=missing), run_id="r", durable=True)
        problems = ledger.verify()
        assert len(problems) == 1 and missing in problems[0].message
        ledger.close()

    # -- content store -------------------------------------------------------------------
    @given(blobs=st.lists(st.binary(max_size=2048), max_size=8))
    @HYP
    def test_digest_is_blake3_of_content(self, tmp_path_factory: Any, blobs: list) -> None:
        ledger = self.make(tmp_path_factory.mktemp("l"))
        for blob in blobs:
            digest = ledger.cas.put(blob)
            assert digest == "b3:" + blake3(blob).hexdigest()
            assert ledger.cas.put(blob) == digest
            assert ledger.cas.exists(digest)
            assert ledger.cas.get(digest) == blob
            with ledger.cas.open(digest) as fh:
                assert fh.read() == blob
        ledger.close()

    def test_missing_blob_is_an_error(self, tmp_path: Path) -> None:
        ledger = self.make(tmp_path)
        digest = "b3:" + blake3(b"absent").hexdigest()
        assert not ledger.cas.exists(digest)
        with pytest.raises(MissingBlobError):
            ledger.cas.get(digest)
        ledger.close()

    @given(
        files=st.dictionaries(
            st.lists(st.sampled_from(["a", "b", "c.txt", "d.py"]), min_size=1, max_size=3).map(
                lambda parts: "/".join(parts)
            ),
            st.tuples(st.binary(max_size=512), st.sampled_from([0o644, 0o755, 0o600, 0o444])),
            max_size=6,
        )
    )
    @HYP
    def test_tree_materializes_exact_bytes_and_modes(
        self, tmp_path_factory: Any, files: dict
    ) -> None:
        base = tmp_path_factory.mktemp("t")
        src = base / "src"
        src.mkdir()
        written = _write_tree(src, files)
        ledger = self.make(base / "ledger")
        tree = ledger.cas.snapshot(src)
        assert tree == ledger.cas.snapshot(src), "same directory, same digest"
        out = base / "out"
        ledger.cas.materialize(tree, out)
        assert _read_tree(out) == written
        entries = ledger.cas.read_tree(tree)
        assert [e.path for e in entries] == sorted(written)
        for e in entries:
            assert e.digest == "b3:" + blake3(written[e.path][0]).hexdigest()
        if written:
            one = sorted(written)[0]
            only = base / "only"
            ledger.cas.materialize(ledger.cas.snapshot(src, paths=[one]), only)
            assert _read_tree(only) == {one: written[one]}
            ledger.cas.materialize(tree, base / "only2", only=[one])
            assert _read_tree(base / "only2") == {one: written[one]}
        ledger.close()


def _continue_fold(state: dict[str, int], new: list) -> dict[str, int]:
    state = dict(state)
    for env in new:
        if isinstance(env.payload, Counted):
            k = f"{env.run_id}/{env.payload.key}"
            state[k] = state.get(k, 0) * 2 + env.payload.by
    return state


def _write_tree(root: Path, files: dict) -> dict[str, tuple[bytes, int]]:
    written: dict[str, tuple[bytes, int]] = {}
    for rel, (data, mode) in files.items():
        path = root / rel
        if any(rel.startswith(w + "/") or w.startswith(rel + "/") for w in written):
            continue  # a file cannot also be a directory
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
        os.chmod(path, mode)
        written[rel] = (data, mode)
    return written


def _read_tree(root: Path) -> dict[str, tuple[bytes, int]]:
    if not root.exists():
        return {}
    return {
        p.relative_to(root).as_posix(): (p.read_bytes(), stat.S_IMODE(p.stat().st_mode))
        for p in root.rglob("*")
        if p.is_file()
    }


def _renamed_v1_model() -> type[EventModel]:
    class RenamedV1(EventModel):
        schema_version = 1
        type: Literal["Renamed"] = "Renamed"
        old: str

    return RenamedV1


def _renamed_v3_model() -> type[EventModel]:
    class RenamedV3(EventModel):
        schema_version = 3
        type: Literal["Renamed"] = "Renamed"
        previous: str
        name: str
        extra: int

    return RenamedV3


class TestFileLedger(LedgerContract):
    def make(self, tmp_path: Path, registry: EventRegistry = REGISTRY) -> Ledger:
        return Ledger.open(tmp_path / "ledger", registry=registry, writer_id="w0")

    def reopen(self, ledger: Ledger, registry: EventRegistry) -> Ledger:
        assert ledger.root is not None
        ledger.close()
        return Ledger.open(ledger.root, registry=registry, writer_id="w0")


class TestMemoryLedger(LedgerContract):
    def make(self, tmp_path: Path, registry: EventRegistry = REGISTRY) -> Ledger:
        return Ledger.memory(registry=registry, writer_id="w0")

    def reopen(self, ledger: Ledger, registry: EventRegistry) -> Ledger:
        ledger.registry = registry
        return ledger


def test_a_large_file_is_streamed_in_and_hashes_right(tmp_path: Path) -> None:
    """Files above the in-memory threshold take the kernel-copy path."""
    big = tmp_path / "big.bin"
    data = os.urandom(1 << 20) * 17 + b"tail"
    big.write_bytes(data)
    ledger = Ledger.open(tmp_path / "ledger", registry=REGISTRY)
    digest = ledger.cas.put(big)
    assert digest == "b3:" + blake3(data).hexdigest()
    assert ledger.cas.put(big) == digest
    path = ledger.cas.path(digest)
    assert path is not None and path.read_bytes() == data
    assert list((tmp_path / "ledger" / "cas" / "tmp").iterdir()) == []
    ledger.close()


def test_a_tree_entry_leaving_the_tree_is_refused(tmp_path: Path) -> None:
    import json

    from aka_ledger import CorruptError

    ledger = Ledger.memory(registry=REGISTRY)
    blob = ledger.cas.put(b"x")
    evil = {"format": "aka-tree/1", "entries": [["../escape", 0o100644, blob, 1]]}
    tree = ledger.cas.put(json.dumps(evil).encode())
    with pytest.raises(CorruptError, match="leaves the tree"):
        ledger.cas.materialize(tree, tmp_path / "out")
    assert not (tmp_path / "escape").exists()


def test_a_file_changing_while_it_is_stored_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import aka_ledger._cas as cas_module

    big = tmp_path / "big.bin"
    big.write_bytes(os.urandom(17 << 20))
    real_copy = cas_module._copy

    def copy_then_touch(*args: Any) -> None:
        real_copy(*args)
        with open(big, "ab") as fh:
            fh.write(b"appended meanwhile")

    monkeypatch.setattr(cas_module, "_copy", copy_then_touch)
    ledger = Ledger.open(tmp_path / "ledger", registry=REGISTRY)
    with pytest.raises(LedgerError, match="changed while being stored"):
        ledger.cas.put(big)
    assert list(ledger.cas.digests()) == []
    ledger.close()
