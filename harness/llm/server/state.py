"""The script a server answers from: reply positions, error steps, attempt counts."""

from __future__ import annotations

import asyncio
import hashlib
import json
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from harness.canonical import canonical_json
from harness.llm.script import ScriptStep

__all__ = ["DEFAULT_MAX_DELAY", "Reply", "ScriptState"]

DEFAULT_MAX_DELAY = 30.0


@dataclass
class _Position:
    """The reply at one position, and the errors that fail the attempts before it."""

    errors: list[ScriptStep]
    reply: ScriptStep | None  # None past the end of the script


def _positions(steps: Sequence[ScriptStep]) -> tuple[list[_Position], list[ScriptStep]]:
    positions: list[_Position] = []
    pending: list[ScriptStep] = []
    for step in steps:
        for _ in range(step.repeat):
            if step.error is not None:
                pending.append(step)
            else:
                positions.append(_Position(pending, step))
                pending = []
    return positions, pending


class Reply:
    """What one request gets: a scripted reply (number ``n``) or an error step."""

    def __init__(self, n: int, step: ScriptStep | None, error: ScriptStep | None = None) -> None:
        self.n = n
        self.step = step
        self.error = error

    def tool_calls(self) -> list[dict[str, Any]]:
        """The step's calls with their ids and arguments as the model sends them."""
        calls = []
        for i, call in enumerate(self.step.tool_calls if self.step else []):
            if call.raw_arguments is not None:
                arguments = call.raw_arguments
            else:
                arguments = json.dumps(call.arguments or {}, ensure_ascii=False)
            # `id: null` in the step: the reply carries no id, as some OpenAI-compatible
            # servers answer; the client then makes one up.
            no_id = call.id is None and "id" in call.model_fields_set
            call_id = None if no_id else call.id or f"call_{self.n}_{i}"
            calls.append({"id": call_id, "name": call.name, "arguments": arguments})
        return calls

    def usage(self) -> dict[str, int]:
        """The step's usage (zeros when the script gives none)."""
        if self.step is not None and self.step.usage is not None:
            return self.step.usage.as_dict()
        return {"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0}

    def finish_reason(self) -> str:
        """The step's finish_reason, else tool_calls or stop."""
        if self.step is not None and self.step.finish_reason:
            return self.step.finish_reason
        return "tool_calls" if self.step and self.step.tool_calls else "stop"


class ScriptState:
    """The script, the attempt counts, and what the handlers need to answer."""

    def __init__(self, steps: Sequence[ScriptStep], max_delay: float = DEFAULT_MAX_DELAY) -> None:
        self.positions, self.trailing_errors = _positions(steps)
        self.max_delay = max_delay
        self.attempts: Counter[str] = Counter()
        self._stop: asyncio.Event | None = None

    def _stop_event(self) -> asyncio.Event:
        if self._stop is None:
            self._stop = asyncio.Event()
        return self._stop

    def stopping(self) -> None:
        """Wake every held response: the server is shutting down."""
        self._stop_event().set()

    async def hold(self, seconds: float) -> float | None:
        """Sleep up to ``seconds`` (bounded by max_delay), waking early on shutdown.

        Returns None after the full time, or the seconds held when shutdown cut it short.
        """
        seconds = min(seconds, self.max_delay)
        if seconds <= 0:
            return None
        loop = asyncio.get_running_loop()
        started = loop.time()
        try:
            await asyncio.wait_for(self._stop_event().wait(), seconds)
        except TimeoutError:
            return None
        return loop.time() - started

    def reset(self) -> None:
        """Forget the attempt counts."""
        self.attempts.clear()

    def pick(self, k: int, conversation: Any, api: str) -> Reply:
        """The answer to a request of ``api`` whose input holds ``k`` replies.

        Attempts are counted per endpoint: a 429 a chat request took does not use up the
        error step of the same conversation on /v1/responses.
        """
        if k < len(self.positions):
            position = self.positions[k]
            errors, step = position.errors, position.reply
        else:
            errors, step = self.trailing_errors, None
        if not errors:
            # No error step fails this position: attempts do not matter, and hashing the
            # whole conversation would cost every request the length of the run.
            return Reply(k + 1, step)
        key = f"{api}:{canonical_json(conversation)}"
        digest = hashlib.sha256(key.encode()).hexdigest()
        attempt = self.attempts[digest]
        self.attempts[digest] += 1
        if attempt < len(errors):
            return Reply(k + 1, None, errors[attempt])
        return Reply(k + 1, step)
