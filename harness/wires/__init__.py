"""Model wires: one module per model API, converting between its JSON and streams and
harness's neutral request and reply (``harness.wires._neutral``; docs/wires.md).

Everything that speaks to or about a model goes through a wire: ``harness serve``, the
external observer and the recording proxy, cassette matching, freeze, and the own loop's
recorded sources. A caller holds a ``Wire`` (found with ``harness._modelwires.wire_for(path)``
or ``wire_named(api)`` among the wires every plugin registered through
``harness_register_wires``) and calls its methods; no caller reads an API's JSON itself.

The four wires (``WIRES``, in ``registry``, registered by the built-in plugin
``harness._modelwires``), each with the modules around it:

- OpenAI Chat Completions: ``openai_chat``;
- OpenAI Responses: ``openai_responses``, served by ``openai_responses_serving``;
- Anthropic Messages: ``anthropic_messages``, served by ``anthropic_serving``, the own
  loop's requests written by ``anthropic_client`` (the wire's ``client``);
- Gemini: ``gemini``, served by ``gemini_serving``, the own loop's requests written by
  ``gemini_client``.

``openai_shared`` holds what OpenAI's two APIs share (usage, errors, tool definitions);
``failures`` tells a tool result whose text says the tool failed, for every wire and for
freeze.

A new API is a module with a ``WIRE`` object, registered with its vendor (a
``harness._vendors.WireVendor``) through the hook ``harness_register_wires``
(docs/plugins.md#a-model-api-from-a-plugin): serve routes its ``paths`` to the same
handler, the observer and freeze find it by path (``harness._modelwires.wire_for``),
cassette matching learns its ``items_field``, and results, expectations and the report
stay wire-neutral.
"""

from harness.wires._neutral import (
    Item,
    ServedReply,
    ServedRequest,
    StatelessRequests,
    ToolOffer,
    ToolResult,
    ToolSpec,
    WireError,
    WireReply,
    renamed,
)
from harness.wires._registry import (
    ANTHROPIC_MESSAGES,
    GEMINI,
    OPENAI_CHAT,
    OPENAI_RESPONSES,
    WIRES,
    Wire,
    read_answer,
)

__all__ = [
    "ANTHROPIC_MESSAGES",
    "GEMINI",
    "OPENAI_CHAT",
    "OPENAI_RESPONSES",
    "WIRES",
    "Item",
    "ServedReply",
    "ServedRequest",
    "StatelessRequests",
    "ToolOffer",
    "ToolResult",
    "ToolSpec",
    "Wire",
    "WireError",
    "WireReply",
    "read_answer",
    "renamed",
]
