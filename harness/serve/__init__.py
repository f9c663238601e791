"""``harness serve``: a model server answering from a script, on every wire.

It lets agents written in any language be tested against scripted replies, and
lets recording be exercised with no internet (docs/recording.md). A request that starts
a conversation and holds k assistant replies gets the script's reply k+1; a request that
extends an earlier one gets the reply after that one's, from the script of its
conversation (``conversations``: a scenario's ``llm.conversations``). An
error step takes no position of its own: it fails one attempt at the next reply's
position; attempts are counted per hash of the conversation, so a client's retry
of the same request gets the reply. ``POST /v1/reset`` forgets those counts.

The server is given its script steps; reading them from a scenario file is the
command's job (``harness.cli._serve``). Modules: ``state`` (positions, attempts),
``conversations`` (which conversation a request continues, and where in it it stands),
``answer`` (one handler for every wire of ``harness.wires``: read the request, pick the
reply, write it), ``fit`` (a reply's calls against the tools offered), ``http`` (JSON,
streams, errors), ``app`` (routes), ``bounds`` (what one request may be, checked before
any of it reaches a wire: docs/wires.md#limits), ``running`` (uvicorn).
"""

from harness._asgi import ServerLimits
from harness.serve._app import create_app
from harness.serve._bounds import BodyLimits
from harness.serve._conversations import ConversationLimits
from harness.serve._running import (
    DEFAULT_PORT,
    running_app,
    running_server,
    serve,
    serve_app,
)
from harness.serve._state import DEFAULT_MAX_DELAY, ScriptState

__all__ = [
    "DEFAULT_MAX_DELAY",
    "DEFAULT_PORT",
    "BodyLimits",
    "ConversationLimits",
    "ScriptState",
    "ServerLimits",
    "create_app",
    "running_app",
    "running_server",
    "serve",
    "serve_app",
]
