"""``aka serve``: an HTTP endpoint an RL trainer sends candidates to (127.0.0.1 only).

Each request is handled on a thread of its own (``ThreadingHTTPServer``), so concurrent
requests are evaluated concurrently, up to the evaluator's in-flight limit
(``--in-flight``, :mod:`aka.inflight`); the others wait for a slot.
"""

from __future__ import annotations

import json
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Annotated

import typer

from aka.api import Evaluator
from aka.cli._app import app
from aka.cli._common import DEFAULT_LEDGER, SERVE_PORT, LedgerOpt, bind, open_ledger
from aka.config import TimingSettings
from aka.errors import InputError

MAX_BODY = 16 << 20


def make_server(evaluator: Evaluator, host: str, port: int) -> ThreadingHTTPServer:
    """An HTTP server: ``POST /evaluate`` {task, files} -> result JSON; ``GET /health``.

    Requests are served on threads; ``evaluator`` runs up to its in-flight limit of them
    at once (``GET /health`` says the limit, which trainers' batches send at once).

    ``POST /reward`` {task, response, sample, task_digest?} reads a model's response
    (docs/trainers.md) and returns the reward with feedback (what the trainer adapters
    in :mod:`aka.integrations` send when ``AKA_SERVE_URL`` is set).
    """
    from pydantic import ValidationError

    from aka.api import Sample
    from aka.errors import AkaError
    from aka.integrations import score_response

    class Handler(BaseHTTPRequestHandler):
        def _reply(self, code: int, body: dict[str, object]) -> None:
            data = json.dumps(body).encode()
            self.send_response(code)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self) -> None:
            if self.path == "/health":
                self._reply(
                    200,
                    {
                        "ok": True,
                        "run_id": evaluator.run_id,
                        "device": evaluator.device,
                        "in_flight": evaluator.in_flight,
                        "timing": evaluator.timing.model_dump(),
                    },
                )
            else:
                self._reply(404, {"error": "unknown path; use POST /evaluate or GET /health"})

        def do_POST(self) -> None:
            if self.path not in ("/evaluate", "/reward"):
                self._reply(404, {"error": "unknown path; use POST /evaluate or POST /reward"})
                return
            length = int(self.headers.get("Content-Length") or 0)
            if not 0 < length <= MAX_BODY:
                self._reply(413, {"error": f"body must be 1..{MAX_BODY} bytes"})
                return
            if self.path == "/reward":
                self._reward(self.rfile.read(length))
                return
            try:
                req = json.loads(self.rfile.read(length))
                files = req["files"]
                if not isinstance(req["task"], str) or not isinstance(files, dict):
                    raise TypeError("task must be a string and files an object")
                result = evaluator.evaluate(req["task"], files)
            except (KeyError, TypeError, json.JSONDecodeError) as exc:
                self._reply(
                    400,
                    {
                        "error": f"bad request: {exc}; send {{'task': KEY, 'files': {{path: source}}}}"
                    },
                )
                return
            except AkaError as exc:
                self._reply(400, {"error": str(exc)})
                return
            self._reply(200, result.to_dict())

        def _reward(self, raw: bytes) -> None:
            try:
                req = json.loads(raw)
                unknown = set(req) - {"task", "response", "sample", "task_digest"}
                if unknown or not isinstance(req["task"], str):
                    raise TypeError(f"unknown keys {sorted(unknown)}" if unknown else "task")
                if not isinstance(req["response"], str):
                    raise TypeError("response must be a string")
                sample = Sample.model_validate(req.get("sample") or {"trainer": "http"})
                reward = score_response(
                    evaluator,
                    req["task"],
                    req["response"],
                    sample,
                    task_digest=req.get("task_digest"),
                )
            except (
                KeyError,
                TypeError,
                AttributeError,
                json.JSONDecodeError,
                ValidationError,
            ) as exc:
                self._reply(
                    400,
                    {
                        "error": f"bad request: {exc}; send {{'task': KEY, 'response': TEXT, "
                        "'sample': {'trainer': NAME, 'step': N, 'index': I}}"
                    },
                )
                return
            except AkaError as exc:
                self._reply(400, {"error": str(exc)})
                return
            self._reply(200, reward.to_dict())

        def log_message(self, format: str, *args: object) -> None:  # quiet by default
            pass

    return ThreadingHTTPServer((host, port), Handler)


def _probe(host: str, port: int) -> ThreadingHTTPServer:
    """A server on ``host:port`` that serves nothing: binding it proves the port is free."""
    return ThreadingHTTPServer((host, port), BaseHTTPRequestHandler)


def _timing(**given: float | int | None) -> TimingSettings | None:
    """The timing options given (None when none is), checked before anything is bound or
    recorded; a bad one names its option and what it takes."""
    from aka.integrations import timing_settings

    chosen = {k: v for k, v in given.items() if v is not None}
    if not chosen:
        return None
    try:
        return timing_settings(chosen, where="aka serve")
    except InputError as exc:
        option = "--" + (exc.where or "").rsplit(".", 1)[-1].replace("_", "-")
        raise typer.BadParameter(f"{exc.message} ({exc.fix})", param_hint=option) from None


@app.command()
def serve(
    tasks_root: Annotated[Path, typer.Option("--root", help="Tasks folder.")] = Path("tasks"),
    device: Annotated[
        str, typer.Option(help="cpu, cuda, cuda:N, auto, or several GPUs: cuda:0,1,2,3.")
    ] = "auto",
    host: Annotated[str, typer.Option(help="Bind address.")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="Port (0 picks a free one).")] = SERVE_PORT,
    in_flight: Annotated[
        int | None,
        typer.Option(
            "--in-flight",
            min=1,
            help="Evaluations at once (default AKA_IN_FLIGHT, else half the CPU cores, "
            "at most 8); timing stays one candidate at a time per device.",
        ),
    ] = None,
    unsealed: Annotated[
        bool,
        typer.Option(
            "--unsealed",
            help="Score command-driven tasks too, whose own scripts a candidate can fool "
            "(only for candidates you trust; default AKA_UNSEALED=1, else refused).",
        ),
    ] = False,
    max_time_s: Annotated[
        float | None,
        typer.Option(
            "--max-time-s",
            help="Timing budget per shape, seconds (default 2): each candidate holds its GPU "
            "alone while timed, so this bounds rewards per minute (docs/trainers.md).",
        ),
    ] = None,
    target_rel_ci: Annotated[
        float | None,
        typer.Option("--target-rel-ci", help="Stop a shape at this CI half-width (0.005)."),
    ] = None,
    min_samples: Annotated[
        int | None, typer.Option("--min-samples", help="Samples per arm at least (10).")
    ] = None,
    eval_timeout_s: Annotated[
        float | None,
        typer.Option("--eval-timeout-s", help="Whole-evaluation limit, seconds (per task)."),
    ] = None,
    ledger: LedgerOpt = DEFAULT_LEDGER,
) -> None:
    """Evaluate candidates sent over HTTP; each lands in the ledger as an attempt."""
    from aka.api import Evaluator
    from aka.inflight import resolve

    limit = resolve(in_flight, where="--in-flight")  # a bad AKA_IN_FLIGHT fails before binding
    timing = _timing(
        max_time_s=max_time_s,
        target_rel_ci=target_rel_ci,
        min_samples=min_samples,
        eval_timeout_s=eval_timeout_s,
    )
    led = open_ledger(ledger, create=True)
    # Bind before the evaluator records a run, so a taken port leaves nothing behind.
    probe = bind(lambda: _probe(host, port), host=host, port=port, command="serve")
    port = probe.server_address[1] if port == 0 else port
    probe.server_close()
    try:
        with Evaluator(
            led, tasks_root=tasks_root, device=device, in_flight=limit,
            unsealed=True if unsealed else None, timing=timing,
        ) as evaluator:  # fmt: skip
            server = bind(
                lambda: make_server(evaluator, host, port), host=host, port=port, command="serve"
            )
            typer.echo(
                f"aka serve: http://{host}:{server.server_address[1]}  (POST /evaluate, "
                f"POST /reward, GET /health); run {evaluator.run_id}, "
                f"{evaluator.in_flight} in flight"
            )
            try:
                server.serve_forever()
            except KeyboardInterrupt:
                pass
            finally:
                server.server_close()
            # Leaving the block waits for requests still evaluating, then finishes the run.
    finally:
        led.close()
