"""Model wires: one module per model API, converting between its JSON and streams and
harness's neutral request and reply (``harness.wires.neutral``).

Everything that speaks to or about a model goes through a wire: ``harness serve`` reads
requests and writes answers with it, the external observer and freeze read requests and
answers with it, cassette matching hashes its conversation field item by item, and the
``openai`` source writes its requests and reads its answers with it (``Wire.client``,
``Wire.stream_reader``: the SDK only carries the JSON). No caller reads a model API's JSON
itself: a caller holds a ``Wire`` (found by ``harness.modelwires.wire_for(path)`` or
``wire_named(api)``, among the registered wires) and calls its methods. The wires:
``openai_chat`` (Chat Completions) and ``openai_responses`` (the Responses API;
``openai_responses_serving`` is how serve answers it), sharing OpenAI's error and tool
layouts (``openai_shared``); ``failures`` tells a tool result whose text says the tool
failed, for every wire and for freeze.

Why the neutral side fits the next APIs without changing a caller:

- **Anthropic Messages** (``POST /v1/messages``). Content blocks map one to one:
  ``text`` -> ``WireReply.content``, ``tool_use`` (id, name, input object) -> a call
  ``(id, name, arguments text)`` with the input written as JSON, ``tool_result`` blocks
  of a user message -> ``tool_results`` by ``tool_use_id``, ``system`` -> ``instructions``.
  ``thinking`` blocks are opaque state sent back verbatim, as Responses reasoning items
  are (``normalized`` leaves them out; ``messages`` keeps them as ``reasoning``).
  ``stop_reason`` ``tool_use`` / ``max_tokens`` / ``end_turn`` read as ``tool_calls`` /
  ``length`` / ``stop``; usage ``input_tokens`` / ``output_tokens`` map to Chat
  Completions' names as the Responses API's do. Its SSE events (``message_start``,
  ``content_block_start`` / ``_delta`` with ``text_delta`` / ``input_json_delta``,
  ``message_delta``, ``message_stop``) are read by ``read_sse`` (``data:`` lines with a
  ``type``) and written from the same ``LLMChunk`` pieces serve cuts every reply into (a
  call's opening piece is a ``tool_use`` block start, its argument pieces
  ``input_json_delta``). Its error body ``{"type": "error", "error": {"type":
  "rate_limit_error", "message"}}`` is ``render_error`` / ``read_error`` of a
  ``WireError``, whose status picks the type (529 ``overloaded_error``).
- **Gemini** (``/v1beta/models/{model}:generateContent`` and
  ``:streamGenerateContent?alt=sse``). Parts map the same way: ``text``, ``functionCall``
  (name and args object) -> a call, ``functionResponse`` -> a tool result,
  ``systemInstruction`` -> ``instructions``, ``thought`` parts -> reasoning. Its calls
  often carry no id. The Gemini wire gives each such call an id made from the reply alone
  (its place in the reply and its name), and ``tool_results`` names each
  ``functionResponse`` the same way from the model turn it answers (the turn is sent back
  in ``contents``; responses match its calls by order and name), so the observer pairs
  results by id as for every other wire, unchanged. Streaming is chosen by the path, not
  the body: ``streams(body, path)`` takes both; the model name is in the path too
  (``paths`` are route templates).
  Errors ``{"error": {"code": 429, "status": "RESOURCE_EXHAUSTED", "message"}}`` are a
  ``WireError`` again.

So a new API is one more module with a ``WIRE`` object, registered with its vendor (a
``harness.vendors.WireVendor``) through the hook ``harness_register_wires`` (harness's own
are ``WIRES``, registered by the built-in plugin ``harness.modelwires``; a plugin
registers its own: docs/plugins.md): serve routes its
``paths`` to the same handler, the observer and freeze find it by path
(``harness.modelwires.wire_for``), cassette matching learns its ``items_field``
(``contents`` for Gemini), and results, expectations and the report stay wire-neutral.
"""

from harness.wires.registry import (
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
    "Wire",
    "read_answer",
]
