"""The script a server answers from: reply positions, error steps, attempt counts."""

from __future__ import annotations

import asyncio
import hashlib
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from harness._canonical import canonical_json
from harness.llm._chunks import LLMChunk, reply_chunks
from harness.llm._config import ConversationRule
from harness.llm._script import ScriptStep, uniform, wire_calls
from harness.serve._conversations import ConversationLimits, Conversations
from harness.serve._threads import Threads
from harness.wires._neutral import ServedReply, ServedRequest, Wire

__all__ = ["DEFAULT_MAX_DELAY", "Reply", "ScriptState"]

DEFAULT_MAX_DELAY = 30.0
# Attempt counts kept (one per conversation at a position an error step fails), the
# oldest forgotten first: a retry comes at once, not a hundred thousand requests later.
_MAX_ATTEMPTS = 100_000


@dataclass
class _Position:
    """The reply at one position, and the errors that fail the attempts before it."""

    errors: list[ScriptStep]
    reply: ScriptStep | None  # None past the end of the script
    number: int | None = None  # the reply's step in the script (1-based), as messages name it


def _positions(steps: Sequence[ScriptStep]) -> tuple[list[_Position], list[ScriptStep]]:
    positions: list[_Position] = []
    pending: list[ScriptStep] = []
    for number, step in enumerate(steps, 1):
        for _ in range(step.repeat):
            if step.fails:
                pending.append(step)
            else:
                positions.append(_Position(pending, step, number))
                pending = []
    return positions, pending


class Reply:
    """What one request gets: a scripted reply (number ``n``) or an error step."""

    def __init__(
        self,
        n: int,
        step: ScriptStep | None,
        error: ScriptStep | None = None,
        number: int | None = None,
        judge: bool = False,
        script: str = "script",
        length: int = 0,
    ) -> None:
        self.n = n
        self.step = step
        self.error = error
        self.number = number  # the step's place in the script (1-based)
        # The script answering (`script`, or a conversation's) and how many replies it holds.
        self.script = script
        self.length = length
        # What its calls' ids start with: a conversation's own (call_c1_2_0, call_c1-2_2_0
        # for the rule's second), so that conversations sharing a history (a supervisor's
        # workers) never repeat an id.
        self.ids = "call"
        self.tag = ""  # and its response ids (resp_harness_c1_2), for the same reason
        self.key = ""  # the key of its conversation (its messages' hash), for message ids
        # A judge's verdict (from the judge script), not the agent's reply.
        self.judge = judge
        # The share of the reply sent before the connection drops (a `cut:` step).
        self.cut: float | None = None

    def tool_calls(self) -> list[tuple[str | None, str, str]]:
        """The step's calls ``(id, name, arguments text)`` as the model sends them."""
        if self.step is None:
            return []
        return wire_calls(self.step, self.n, self.ids)

    def chunks(self) -> list[LLMChunk]:
        """The reply streamed: the step's ``chunks`` as given, else cut as the API cuts."""
        if self.step is not None and self.step.chunks is not None:
            return self.step.stream(self.n)
        content = self.step.content if self.step else None
        return reply_chunks(content, self.tool_calls(), self.finish_reason(), self.usage())

    def served(self, streamed: bool) -> ServedReply:
        """The reply as a wire writes it (its pieces only when ``streamed``)."""
        content = self.step.content if self.step else None
        chunks = self.chunks() if streamed else []
        calls = self.tool_calls()
        reasoning = self.step.reasoning if self.step else None
        return ServedReply(
            self.n,
            content,
            calls,
            self.finish_reason(),
            self.usage(),
            chunks,
            reasoning,
            self.tag,
            self.key,
        )

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

    def __init__(
        self,
        steps: Sequence[ScriptStep],
        max_delay: float = DEFAULT_MAX_DELAY,
        judge_steps: Sequence[ScriptStep] = (),
        conversations: Sequence[ConversationRule] = (),
        draws: str = "",
        limits: ConversationLimits | None = None,
    ) -> None:
        self.positions, self.trailing_errors = _positions(steps)
        # A one_of step draws anew for each request it answers: the n-th request at a
        # step gets draw n (harness.llm._script.uniform), whatever came before elsewhere.
        self.draws = draws
        self.drawn: Counter[str] = Counter()
        # The scripts of llm.conversations, and which conversation each request is in.
        self.scripts = [_positions(rule.script) for rule in conversations]
        self.names = [
            f"conversations[{n}] ({rule.name})" if rule.name else f"conversations[{n}]"
            for n, rule in enumerate(conversations)
        ]
        self.conversations = Conversations(conversations, limits)
        # The conversations held for requests that continue them (Anthropic threads).
        self.threads = Threads((limits or ConversationLimits()).max_conversations)
        # A judge's replies (requests marked x-harness-role: judge), in turn.
        self.judge_steps = [s for s in judge_steps for _ in range(s.repeat)]
        self.judged = 0
        self.max_delay = max_delay
        self.attempts: Counter[str] = Counter()
        self._stop: asyncio.Event | None = None
        # An `error: outage` step reached: it answers every request from then on.
        self.outage: ScriptStep | None = None

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
        """Forget the attempt counts and the conversations, and start the judge script
        again."""
        self.attempts.clear()
        self.conversations.reset()
        self.threads.reset()
        self.judged = 0
        self.drawn.clear()
        self.outage = None

    def pick_judge(self) -> Reply:
        """The answer to a judge's request: the judge script's steps in turn, starting
        over after the last, so that every scenario (or matrix combination) recorded
        against one server gets the same verdicts when it asks its judges in the same
        order. None (script exhausted) without a judge script."""
        n = self.judged
        self.judged += 1
        if not self.judge_steps:
            return Reply(1, None, judge=True)
        step = self._drawn(self.judge_steps[n % len(self.judge_steps)], "judge_script", n)
        if step.error is not None:
            return Reply(n + 1, None, step, judge=True)
        return Reply(n + 1, step, judge=True)

    def known(self) -> int:
        """The most replies a script holds (a chained request names one of them)."""
        return max([len(self.positions), *(len(p) for p, _ in self.scripts)])

    def pick_request(self, wire: Wire, body: dict[str, Any], asked: ServedRequest) -> Reply:
        """The answer to a request: its conversation's script, at its place in it."""
        place = self.conversations.place(wire, body, asked.replies)
        if self.outage is not None:
            return Reply(place.position + 1, None, self.outage)
        if place.rule is None:
            reply = self.pick(place.position, asked.conversation, wire.api)
        else:
            positions, trailing = self.scripts[place.rule]
            name = self.names[place.rule]
            reply = self._pick(
                place.position, positions, trailing, asked.conversation, wire.api, name
            )
            reply.script, reply.length = self.names[place.rule], len(positions)
            # The rule's second conversation on: c1-2 (a worker called twice may be sent
            # its first call's messages: its calls must not repeat their ids).
            which = f"c{place.rule + 1}" + (f"-{place.ordinal}" if place.ordinal > 1 else "")
            reply.ids, reply.tag = f"call_{which}", f"{which}_"
        reply.key = place.key
        if reply.error is None and reply.step is not None and reply.cut is None:
            self.conversations.keep(place, f"resp_harness_{reply.tag}{reply.n}")
        return reply

    def pick(self, k: int, conversation: Any, api: str) -> Reply:
        """The answer to a request of ``api`` whose input holds ``k`` replies.

        Attempts are counted per endpoint: a 429 a chat request took does not use up the
        error step of the same conversation on /v1/responses.
        """
        reply = self._pick(k, self.positions, self.trailing_errors, conversation, api)
        reply.length = len(self.positions)
        return reply

    def _drawn(self, step: ScriptStep, script: str, place: int) -> ScriptStep:
        """The reply a step gives this request: a one_of step's option, drawn."""
        if step.one_of is None:
            return step
        where = f"{script} {place + 1}"
        n = self.drawn[where]
        self.drawn[where] += 1
        return step.draw(uniform(self.draws, where, n))

    def _pick(
        self,
        k: int,
        positions: list[_Position],
        trailing: list[ScriptStep],
        conversation: Any,
        api: str,
        script: str = "script",
    ) -> Reply:
        if k < len(positions):
            position = positions[k]
            errors, step, number = position.errors, position.reply, position.number
        else:
            errors, step, number = trailing, None, None
        if not errors:
            # No error step fails this position: attempts do not matter, and hashing the
            # whole conversation would cost every request the length of the run.
            return self._reply(k, step, number, script)
        key = f"{api}:{canonical_json(conversation)}"
        digest = hashlib.sha256(key.encode()).hexdigest()
        attempt = self.attempts[digest]
        self.attempts[digest] += 1
        if len(self.attempts) > _MAX_ATTEMPTS:
            del self.attempts[next(iter(self.attempts))]
        if attempt < len(errors):
            return self._failing(k, errors[attempt], number)
        return self._reply(k, step, number, script)

    def _failing(self, k: int, failing: ScriptStep, number: int | None) -> Reply:
        """The answer of a failing step (an error, a reply cut off) at position ``k``."""
        if failing.error == "outage":
            self.outage = failing
        if failing.cut is not None:
            # A reply sent in part: the step's reply, its connection dropped midway.
            cut = Reply(k + 1, failing, number=number)
            cut.cut = failing.cut
            return cut
        return Reply(k + 1, None, failing)

    def _reply(self, k: int, step: ScriptStep | None, number: int | None, script: str) -> Reply:
        """The reply at position ``k``: its step's, a one_of step's drawn anew for each
        request (a drawn failure fails this request; the retry draws again)."""
        if step is not None and step.one_of is not None:
            step = self._drawn(step, script, k)
            if step.fails:
                return self._failing(k, step, number)
        return Reply(k + 1, step, number=number)
