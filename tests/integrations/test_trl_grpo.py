"""Acceptance: TRL's GRPOTrainer trains a step with ``AkaReward`` on a bundled task.

The model is a one-layer Llama built from a config and the tokenizer a word-level one
built here (no downloads). Its samples are noise, so most fail to compile: the point is
the plumbing. Every reward the trainer logged must equal what aka recorded for that
completion, and the ledger must hold the completion's text with its step and index.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from aka.events import REGISTRY
from aka.integrations._dataset import export_prompts
from aka.tables import attempt_table
from aka_ledger import Ledger

REPO = Path(__file__).resolve().parents[2]
TASK = "triton2triton/llm/softmax"
CHAT = "{% for m in messages %}{{ m['content'] }}\n{% endfor %}{% if add_generation_prompt %}answer:{% endif %}"


def tiny_tokenizer(texts: list[str]):  # type: ignore[no-untyped-def]
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    words = sorted(
        {w for t in texts for w in t.split()}
        | {"```python", "path=kernel.py", "```", "def", "return"}
    )
    vocab = {w: i for i, w in enumerate(["<pad>", "<eos>", "<unk>", "answer:", *words])}
    tok = Tokenizer(models.WordLevel(vocab=vocab, unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    tok.decoder = decoders.WordPiece(prefix="##")  # joins words with spaces
    hf = PreTrainedTokenizerFast(
        tokenizer_object=tok, pad_token="<pad>", eos_token="<eos>", unk_token="<unk>"
    )
    hf.chat_template = CHAT
    return hf


def test_grpo_step_logs_the_rewards_aka_recorded(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip("trl")
    from datasets import Dataset
    from transformers import LlamaConfig, LlamaForCausalLM, set_seed
    from trl import GRPOConfig, GRPOTrainer

    from aka.integrations.trl import AkaReward

    ledger_dir = tmp_path / "ledger"
    led = Ledger.open(ledger_dir, registry=REGISTRY)
    out, _ = export_prompts(
        REPO / "tasks",
        [TASK],
        tmp_path / "trl.parquet",
        format="trl",
        device="cpu",
        ledger=led,
        repeat=2,
    )
    led.close()
    data = Dataset.from_parquet(str(out))
    assert data.column_names[:3] == ["prompt", "task", "task_digest"]
    tokenizer = tiny_tokenizer([data[0]["prompt"][0]["content"]])
    set_seed(0)
    model = LlamaForCausalLM(
        LlamaConfig(
            vocab_size=len(tokenizer),
            hidden_size=16,
            intermediate_size=32,
            num_hidden_layers=1,
            num_attention_heads=2,
            num_key_value_heads=2,
            max_position_embeddings=1024,
            pad_token_id=0,
            eos_token_id=1,
            bos_token_id=None,
        )
    )
    monkeypatch.setenv("AKA_LEDGER", str(ledger_dir))
    reward = AkaReward(tasks_root=REPO / "tasks", device="cpu", run_name="tiny-grpo")
    args = GRPOConfig(
        output_dir=str(tmp_path / "out"),
        max_steps=1,
        per_device_train_batch_size=2,
        num_generations=2,
        max_completion_length=8,
        use_cpu=True,
        report_to=[],
        logging_steps=1,
        save_strategy="no",
        bf16=False,
        seed=0,
    )
    trainer = GRPOTrainer(
        model=model,
        reward_funcs=[reward],
        args=args,
        train_dataset=data,
        processing_class=tokenizer,
    )
    trainer.train()
    reward.close()
    assert trainer.state.global_step == 1
    logs = trainer.state.log_history[0]
    assert {"rewards/aka_reward/mean", "aka/parsed", "aka/compiled", "aka/correct"} <= set(logs)

    logged = list(trainer._logs["rewards"]["aka_reward"])
    keys = list(trainer._logs["extra"]["aka_attempt"])
    completions = list(trainer._logs["completion"])
    assert len(logged) == len(keys) == len(completions) == 2

    led = Ledger.open(ledger_dir, registry=REGISTRY)
    scored = {r["attempt_key"]: r["score"] for r in attempt_table(led, turns=False).to_dicts()}
    said = {e.attempt_key: e.payload.items[0] for e in led.events(types=["AgentOutput"])}
    refused = {
        e.attempt_key for e in led.events(types=["AttemptFinished"]) if e.payload.status == "error"
    }
    led.close()
    for value, key, completion in zip(logged, keys, completions, strict=True):
        assert value == (0.0 if key in refused else scored[key])  # refused: nothing to run, 0
        assert isinstance(completion, list)  # conversational data: TRL passes chat messages
        assert said[key].text == completion[-1]["content"]
        meta = json.loads(said[key].data)
        assert meta["trainer"] == "trl" and meta["step"] == 0 and meta["trainer_run"] == "tiny-grpo"
    assert sorted(json.loads(said[k].data)["index"] for k in keys) == [0, 1]
    assert all(re.fullmatch(rf"{re.escape(TASK)}#external#\d+", k) for k in keys)
