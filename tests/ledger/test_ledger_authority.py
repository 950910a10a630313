"""Authority in the generic ledger: event types needing a run key are a parameter."""

from __future__ import annotations

from pathlib import Path

from ledger_vocab import REGISTRY as VOCAB
from ledger_vocab import Counted, Opened

from aka_ledger import Authority, Ledger


def test_authority_is_a_parameter_the_ledger_knows_nothing_about(tmp_path: Path) -> None:
    """The generic ledger: any types, any key source; reads drop what fails."""
    keys = {"r": b"k" * 32}
    signer = Authority(frozenset({"Counted"}), keys.get, sign=True)
    with Ledger.open(tmp_path, registry=VOCAB, authority=signer) as led:
        led.append(Opened(name="x"), run_id="r")
        led.append(Counted(key="a", by=1), run_id="r")
        led.append(Counted(key="legacy", by=1), run_id="no-key-run")
    with Ledger.open(tmp_path, registry=VOCAB) as plain:
        plain.append(Counted(key="forged", by=9), run_id="r")
    reader = Authority(frozenset({"Counted"}), keys.get)
    with Ledger.open(tmp_path, registry=VOCAB, authority=reader) as led:
        kept = [getattr(e.payload, "key", None) for e in led.events()]
        assert kept == [None, "a", "legacy"]
        assert [r.type for r in led.rejected] == ["Counted"]
        problems = led.verify()
        assert len(problems) == 1 and "not authenticated" in problems[0].message


def test_a_signed_event_keeps_its_place_in_the_hash_chain(tmp_path: Path) -> None:
    keys = {"r": bytes(range(32))}
    signer = Authority(frozenset({"Counted"}), keys.get, sign=True)
    with Ledger.open(tmp_path, registry=VOCAB, authority=signer, writer_id="w") as led:
        led.append_many([(Counted(key="a", by=i), "r", None) for i in range(5)])
        led.seal()
        assert led.compact().manifest == 1
    reader = Authority(frozenset({"Counted"}), keys.get)
    with Ledger.open(tmp_path, registry=VOCAB, authority=reader) as led:
        assert [e.seq for e in led.events()] == list(range(5)) and led.verify() == []
    with Ledger.open(tmp_path, registry=VOCAB) as plain:  # no keys: MACs cannot be checked
        assert plain.verify() == [] and all(e.event_id[0] == "k" for e in plain.events())
    other = Authority(frozenset({"Counted"}), {"r": b"x" * 32}.get)
    with Ledger.open(tmp_path, registry=VOCAB, authority=other) as led:
        assert led.events() == [] and len(led.rejected) == 5
