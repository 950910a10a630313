"""Scoring in an ``aka serve`` process over HTTP (``POST /reward``, ``GET /health``)."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from collections.abc import Sequence
from typing import TYPE_CHECKING

from aka.errors import InputError
from aka.integrations._scorer import ENV_URL, Reward, Submission

if TYPE_CHECKING:
    from aka.config import TimingSettings
    from aka.sample import Sample

__all__ = ["HttpScorer"]


class HttpScorer:
    """Scores in an ``aka serve`` process: ``POST {url}/reward``.

    Args:
        url: the server's address.
        timeout: seconds to wait for one reward.
        in_flight: requests of a batch sent at once (default: the server's in-flight
            limit, from ``GET /health``); the server evaluates at most its limit at once
            whatever is sent.
    """

    def __init__(self, url: str, *, timeout: float = 3600.0, in_flight: int | None = None):
        self.url = url.rstrip("/")
        self.timeout = timeout
        self.in_flight = in_flight

    def score(
        self, task: str, response: str, sample: Sample, *, task_digest: str | None = None
    ) -> Reward:
        """Send the response; the server parses, evaluates and records it.

        Raises:
            InputError: the server refused the request (its message says why) or cannot
                be reached.
        """
        body = {"task": task, "response": response, "sample": sample.model_dump()}
        if task_digest:
            body["task_digest"] = task_digest
        req = urllib.request.Request(
            f"{self.url}/reward",
            data=json.dumps(body).encode(),
            method="POST",
            headers={"Content-Type": "application/json"},
        )
        try:
            with urllib.request.urlopen(req, timeout=self.timeout) as resp:
                return Reward.from_dict(json.loads(resp.read()))
        except urllib.error.HTTPError as exc:
            detail = json.loads(exc.read() or b"{}").get("error", str(exc))
            raise InputError(detail, where=f"{self.url}/reward") from None
        except urllib.error.URLError as exc:
            raise self._unreachable(exc) from None

    def score_batch(self, batch: Sequence[Submission]) -> list[Reward]:
        """Send the batch as concurrent requests; the rewards come back in order.

        Raises:
            InputError: as :meth:`score`, for the first failing submission in order
                (after every other request was answered).
        """
        from aka.inflight import in_order

        def one(sub: Submission) -> Reward:
            return self.score(sub.task, sub.response, sub.sample, task_digest=sub.task_digest)

        if len(batch) <= 1:
            return [one(sub) for sub in batch]
        return in_order(one, batch, self.in_flight or self._server_in_flight())

    def _server_in_flight(self) -> int:
        """The server's in-flight limit (1 from a server that does not say)."""
        try:
            with urllib.request.urlopen(f"{self.url}/health", timeout=60) as resp:
                limit = json.loads(resp.read()).get("in_flight", 1)
        except urllib.error.URLError as exc:
            raise self._unreachable(exc) from None
        self.in_flight = limit if isinstance(limit, int) and limit >= 1 else 1
        return self.in_flight

    def require_timing(self, wanted: TimingSettings, *, where: str) -> None:
        """Check that the server times as ``wanted``: it times every request with its own
        settings, so a trainer that asked for another budget would silently get the
        server's.

        Raises:
            InputError: the server is unreachable, or times otherwise (the fix gives the
                ``aka serve`` options that would match).
        """
        try:
            with urllib.request.urlopen(f"{self.url}/health", timeout=60) as resp:
                found = json.loads(resp.read()).get("timing")
        except urllib.error.URLError as exc:
            raise self._unreachable(exc) from None
        want = wanted.model_dump()
        if found == want:
            return
        options = " ".join(f"--{k.replace('_', '-')} {v}" for k, v in want.items() if v is not None)
        raise InputError(
            f"{self.url} times with {found if found else 'settings it does not report'}, "
            f"not {want}",
            where=where,
            fix=f"start the server with `aka serve {options}`, or drop timing to take the server's",
        )

    def _unreachable(self, exc: urllib.error.URLError) -> InputError:
        return InputError(
            f"cannot reach aka serve: {exc.reason}",
            where=self.url,
            fix=f"start `aka serve` there, or unset {ENV_URL} to score in-process",
        )

    def close(self) -> None:
        """Nothing to release: the server owns the evaluator."""
