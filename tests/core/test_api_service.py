"""The RL-loop API and `aka serve`: candidates in, rewards out, every one in the ledger."""

from __future__ import annotations

import json
import threading
import urllib.request
from pathlib import Path

from aka.api import Evaluator
from aka.config import TimingSettings
from aka.events import REGISTRY
from aka_ledger import Ledger

FAST = "import torch\n\n\ndef affine(x):\n    return torch.addcmul(torch.ones_like(x), x, torch.full_like(x, 2.0))\n"
WRONG = "def affine(x):\n    return x * 3\n"
TIMING = TimingSettings(max_time_s=0.2, min_samples=5)


def test_evaluate_batch_records_attempts(tasks_root: Path, ledger_dir: Path, cli) -> None:
    with Evaluator(ledger_dir, tasks_root=tasks_root, device="cpu", timing=TIMING) as ev:
        good, bad = ev.evaluate_batch(
            [("torch/ops/affine", {"kernel.py": FAST}), ("torch/ops/affine", {"kernel.py": WRONG})]
        )
        run_id = ev.run_id
    assert good.correct and good.reward > 120 and good.candidate.startswith("b3:")
    assert not bad.correct and bad.reward == 20.0
    rows = json.loads(cli("report", run_id, "--ledger", str(ledger_dir), "--format", "json").out)
    assert [r["score"] for r in rows] == [good.reward, bad.reward]
    assert cli("audit", good.attempt_key, "--run", run_id, "--ledger", str(ledger_dir)).code == 0


def test_serve_over_http(tasks_root: Path, ledger_dir: Path) -> None:
    from aka.cli._serve import make_server

    led = Ledger.open(ledger_dir, registry=REGISTRY)
    with Evaluator(led, tasks_root=tasks_root, device="cpu", timing=TIMING) as ev:
        server = make_server(ev, "127.0.0.1", 0)
        thread = threading.Thread(target=server.serve_forever, daemon=True)
        thread.start()
        base = f"http://127.0.0.1:{server.server_address[1]}"
        try:
            body = json.dumps({"task": "torch/ops/affine", "files": {"kernel.py": FAST}}).encode()
            with urllib.request.urlopen(
                urllib.request.Request(f"{base}/evaluate", data=body, method="POST"), timeout=120
            ) as r:
                result = json.loads(r.read())
            assert result["correct"] is True and result["reward"] > 120
            bad = json.dumps({"task": "torch/ops/affine", "files": {"reference.py": "x"}}).encode()
            try:
                urllib.request.urlopen(
                    urllib.request.Request(f"{base}/evaluate", data=bad, method="POST"), timeout=60
                )
                raise AssertionError("a non-editable file must be refused")
            except urllib.error.HTTPError as exc:
                assert exc.code == 400 and "not editable" in json.loads(exc.read())["error"]
        finally:
            server.shutdown()
            server.server_close()
    led.close()
