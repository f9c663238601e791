"""The pieces of a streamed reply: what a source emits, how pieces add up to a reply,
and how a whole reply is cut into pieces when nobody says how.

One shape for every source (scripted steps, the OpenAI SDK's Chat Completions and
Responses streams, ``harness serve``): a chunk is a Chat Completions delta, flattened.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from harness._messages import AssistantMessage, ToolCall

__all__ = [
    "ChunkAccumulator",
    "LLMChunk",
    "ToolCallDelta",
    "message_chunks",
    "pieces",
    "reply_chunks",
]


@dataclass(frozen=True, slots=True)
class ToolCallDelta:
    """A piece of one tool call: ``index`` says which call of the reply it belongs to.

    The first piece of a call usually carries its ``id`` and ``name``, the later ones
    more of its ``arguments`` text; some providers repeat the id and name in every piece.
    """

    index: int
    id: str | None = None
    name: str | None = None
    arguments: str | None = None


@dataclass(frozen=True, slots=True)
class LLMChunk:
    """One piece of a streamed reply, as it arrived (any field may be missing or empty).

    ``content`` is text (``""`` is an empty chunk, as streams send), ``tool_calls`` are
    pieces of calls, ``finish_reason`` usually comes in the last piece with a choice and
    ``usage`` (Chat Completions' names) in the very last one.
    """

    content: str | None = None
    tool_calls: tuple[ToolCallDelta, ...] = ()
    finish_reason: str | None = None
    usage: dict[str, int] | None = None


class _Slot:
    """One tool call being put together from its pieces."""

    __slots__ = ("arguments", "id", "name")

    def __init__(self) -> None:
        self.id: str | None = None
        self.name = ""
        self.arguments: list[str] = []


class ChunkAccumulator:
    """Puts a reply together from its chunks, as a careful client does.

    Tool-call pieces are gathered by ``index``: the first id is kept, a repeated identical
    name is ignored (some providers resend both in every piece, which the SDK's own
    accumulator doubles), arguments are concatenated. The last finish_reason and usage
    given win.
    """

    __slots__ = ("_calls", "_finish", "_text", "_usage")

    def __init__(self) -> None:
        self._text: list[str] = []
        self._calls: dict[int, _Slot] = {}
        self._finish: str | None = None
        self._usage: dict[str, int] | None = None

    def add(self, chunk: LLMChunk) -> None:
        """Take one chunk."""
        if chunk.content:
            self._text.append(chunk.content)
        for delta in chunk.tool_calls:
            slot = self._calls.get(delta.index)
            if slot is None:
                slot = self._calls[delta.index] = _Slot()
            if delta.id and not slot.id:
                slot.id = delta.id
            if delta.name and delta.name != slot.name:
                slot.name += delta.name
            if delta.arguments:
                slot.arguments.append(delta.arguments)
        if chunk.finish_reason:
            self._finish = chunk.finish_reason
        if chunk.usage is not None:
            self._usage = chunk.usage

    @property
    def text(self) -> str:
        """The text so far."""
        return "".join(self._text)

    @property
    def usage(self) -> dict[str, int] | None:
        """The last usage given (None when no chunk carried one)."""
        return self._usage

    @property
    def finish_reason(self) -> str | None:
        """The last finish_reason given (None when no chunk carried one)."""
        return self._finish

    def calls(self) -> list[tuple[str | None, str, str]]:
        """``(id, name, arguments text)`` of each call, in index order."""
        return [
            (slot.id, slot.name, "".join(slot.arguments)) for _, slot in sorted(self._calls.items())
        ]

    def message(self, call: int, empty: str | None = None) -> AssistantMessage:
        """The reply: calls without an id get ``call_<call>_<i>`` as scripted calls do.

        A stream cannot tell an empty text from none: ``empty`` is the content then.
        """
        tool_calls = [
            ToolCall.from_text(call_id or f"call_{call}_{i}", name, arguments)
            for i, (call_id, name, arguments) in enumerate(self.calls())
        ]
        finish = self._finish or ("tool_calls" if tool_calls else "stop")
        content = self.text or empty
        return AssistantMessage(content=content, tool_calls=tool_calls, finish_reason=finish)


def pieces(text: str, size: int = 0) -> list[str]:
    """Stream chunks: words (with their trailing space), or fixed-size slices."""
    if not text:
        return []
    if size:
        return [text[i : i + size] for i in range(0, len(text), size)]
    return re.findall(r"\S+\s*|\s+", text)


def reply_chunks(
    content: str | None,
    calls: Sequence[tuple[str | None, str, str]],
    finish_reason: str | None,
    usage: dict[str, int] | None,
) -> list[LLMChunk]:
    """A whole reply cut as the Chat Completions API streams it.

    An opening chunk (``""`` for a reply with text, no text for one of calls only), a
    chunk per word, per call an opening piece (id, name, ``""``) and its arguments in
    pieces of 8 characters, the finish_reason alone, and usage last when there is one.
    ``calls`` are ``(id, name, arguments text)``.
    """
    out = [LLMChunk(content="" if content or not calls else None)]
    out.extend(LLMChunk(content=piece) for piece in pieces(content or ""))
    for i, (call_id, name, arguments) in enumerate(calls):
        out.append(LLMChunk(tool_calls=(ToolCallDelta(i, call_id, name, ""),)))
        out.extend(
            LLMChunk(tool_calls=(ToolCallDelta(i, arguments=piece),))
            for piece in pieces(arguments, 8)
        )
    out.append(LLMChunk(finish_reason=finish_reason))
    if usage is not None:
        out.append(LLMChunk(usage=usage))
    return out


def message_chunks(message: AssistantMessage, usage: dict[str, int] | None) -> list[LLMChunk]:
    """A reply that arrived whole, cut as ``reply_chunks`` cuts it (for sources that do
    not stream)."""
    calls = [(c.id, c.name, c.arguments_json()) for c in message.tool_calls]
    return reply_chunks(message.content, calls, message.finish_reason, usage)
