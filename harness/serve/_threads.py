"""Conversations the server holds between requests: Anthropic's message threads.

A request with ``thread: {type: create}`` carries its whole history; its answer's id then
names the conversation (the request's messages and the reply), and a later request with
``thread: {type: continue, previous_message_id}`` sends only its new messages (and no
system text or tools, which the thread keeps). Both ``harness serve`` and the external
observer read such a request as the whole request it stands for, so placing it, picking
its reply, the fit checks and the observed run are those of a client that sent it all.

As the API, a held reply is continued once: its continue replaces it with the next reply.
A continue of a reply the server does not hold (another server's, or one continued
already) is answered 404 ``thread_not_found``, and the SDK sends the whole history again
under a new thread (docs/wires.md#message-threads).
"""

from __future__ import annotations

from typing import Any

from harness.wires._neutral import Wire, WireError

__all__ = ["Threads"]


class Threads:
    """The held conversations of one server (or one observed run), by reply id: at most
    ``most`` of them, the oldest let go first (a continue of one is then a 404, and the
    SDK sends the whole conversation again: docs/wires.md#limits)."""

    def __init__(self, most: int = 1000) -> None:
        self._held: dict[str, dict[str, Any]] = {}
        self.most = most

    def reset(self) -> None:
        """Forget every held conversation."""
        self._held.clear()

    def resume(self, wire: Wire, body: dict[str, Any]) -> dict[str, Any]:
        """The whole request ``body`` stands for (``body`` itself unless it continues a
        held conversation); WireError 404 ``thread_not_found`` for an unknown one, the
        API's 400 for a thread it refuses."""
        turn = wire.held(body)
        if turn is None or turn.previous is None:
            return body
        earlier = self._held.get(turn.previous)
        if earlier is None:
            raise WireError(
                404,
                f"thread_not_found: no thread holds the reply {turn.previous} (it was never "
                "given by this server, or was continued already): send the whole "
                "conversation with thread: {type: create}",
                "thread_not_found",
            )
        return wire.resumed(body, earlier)

    def keep(
        self,
        wire: Wire,
        body: dict[str, Any],
        whole: dict[str, Any],
        answer: tuple[Any, bool] | None,
    ) -> None:
        """Hold the conversation of a threaded request ``body`` (``whole``: what it stands
        for) with its successful ``answer``, under the answer's id."""
        turn = wire.held(body)
        if turn is None:
            return
        if turn.previous is not None:
            self._held.pop(turn.previous, None)
        reply_id, output = wire.held_answer(answer)
        if reply_id is not None:
            self._held.pop(reply_id, None)  # the newest last
            self._held[reply_id] = {**whole, wire.items_field: [*wire.items(whole), *output]}
            while len(self._held) > self.most:
                del self._held[next(iter(self._held))]
