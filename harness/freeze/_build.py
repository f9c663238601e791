"""The scripted scenario of one recorded run: input, tools with per-call results, script.

Agent settings and tool definitions come from the scenario that made the recording when
it is given; everything the model and the tools said comes from the recording.
"""

from __future__ import annotations

from typing import Any

from harness._errors import HarnessError
from harness._messages import ToolCall, parse_arguments, text_of
from harness._modelwires import wire_named
from harness._secrets import masked_repr
from harness.freeze._chains import history_of
from harness.freeze._recorded import FreezeError, RecordedCall, RecordedRun, shape
from harness.freeze._served import served_tools
from harness.scenario._schema import Scenario
from harness.scenario._templates import TEMPLATE_MARKERS
from harness.wires._failures import failure_form, raised_exception
from harness.wires._neutral import reasoning_text

__all__ = ["build_scenario", "build_target_scenario", "per_api", "replayed_calls"]

# agentbuilder spends two iterations per reply (request, then tools or completion).
_DEFAULT_MAX_ITERATIONS = 80
# What a frozen stub takes from the original scenario's definition of the same tool.
_TOOL_DEFINITION = {"description", "parameters", "schema_", "strict", "latency"}


def replayed_calls(run: RecordedRun) -> list[RecordedCall]:
    """The run's calls without the failed attempts its client retried.

    A script has no retries (harness itself sends none under a cassette): an error
    step ends the run. An attempt that failed and was sent again by another client's
    retry logic is left out, so the frozen run follows the retry.
    """
    calls = run.calls
    return [
        call
        for i, call in enumerate(calls)
        if not (
            call.error is not None
            and i + 1 < len(calls)
            and shape(calls[i + 1].conversation) == shape(call.conversation)
        )
    ]


def _returns(text: str) -> str:
    # Stub results are Jinja templates: a recorded text that looks like one stays literal.
    if any(marker in text for marker in TEMPLATE_MARKERS):
        return "{% raw %}" + text + "{% endraw %}"
    return text


def _recorded_tools(call: RecordedCall) -> dict[str, dict[str, Any]]:
    """The function tools a recorded request offers, as stub definitions (read by the
    request's wire)."""
    specs: dict[str, dict[str, Any]] = {}
    for tool in wire_named(call.api).tools(call.body.get("tools") or []):
        if not tool.name:
            continue
        spec: dict[str, Any] = {}
        if tool.description:
            spec["description"] = tool.description
        spec["schema"] = tool.parameters or {"type": "object", "properties": {}}
        if tool.strict:
            spec["strict"] = True
        specs[tool.name] = spec
    return specs


def _tool_specs(calls: list[RecordedCall], original: Scenario | None) -> dict[str, dict[str, Any]]:
    """Stub definitions: the original's (short forms stay short), else the recorded schema.

    Every tool the run offered, on any request: a client may offer other tools later in a
    run (an Agents SDK handoff offers the next agent's), and a scenario offers one set.
    """
    specs: dict[str, dict[str, Any]] = {}
    for call in calls:
        for name, spec in _recorded_tools(call).items():
            specs.setdefault(name, spec)
    if original is None:
        return specs
    for name in specs:
        given = original.tools.get(name)
        if given is not None and given.use is None:
            specs[name] = given.model_dump(
                by_alias=True, exclude_unset=True, include=_TOOL_DEFINITION
            )
    return specs


def _items_start(first: RecordedCall) -> tuple[str | None, str, list[Any]]:
    """(system, input, history) from the normalized conversation of a request that is not
    Chat Completions' (the Responses API's ``input`` items or the chain it continues, the
    Messages API's ``system`` and messages, Gemini's contents)."""
    items = first.conversation
    system = None
    if items and items[0][:2] == ("message", "system"):
        system, items = items[0][2], items[1:]
    if not items or items[-1][:2] != ("message", "user"):
        raise _no_input(first)
    try:
        history = history_of(items[:-1])
    except FreezeError as exc:
        raise FreezeError(f"interaction {first.number}: {exc}") from None
    return system, items[-1][2], history


def _no_input(first: RecordedCall) -> FreezeError:
    """Why the run's first request gives no ``input``: what it ends with instead."""
    last = first.conversation[-1] if first.conversation else None
    if last is not None and last[:2] == ("message", "assistant"):
        why = "ends with an assistant message (a prefill the model goes on from)"
    elif last is not None and last[0] != "message":
        shown = masked_repr(last[-1], 80)
        why = (
            f"ends with content a scenario cannot send as its input ({shown}: an image, a "
            "document, ...)"
        )
    else:
        why = "does not end with a user message"
    return FreezeError(
        f"interaction {first.number}: the run's first request {why}, and a scenario's input "
        "is a user's text: cannot freeze it"
    )


def _conversation_start(first: RecordedCall) -> tuple[str | None, str, list[Any]]:
    """(system, input, history) from the first request of the run."""
    body = first.body
    if first.api != "chat":
        return _items_start(first)
    messages = body.get("messages")
    if not isinstance(messages, list) or not all(isinstance(m, dict) for m in messages):
        raise FreezeError(
            f"interaction {first.number}: `messages` is not a list of message objects"
        )
    system = None
    rest: list[dict[str, Any]] = []
    for message in messages:
        if message.get("role") in ("system", "developer") and system is None and not rest:
            system = text_of(message.get("content"))
        else:
            rest.append(message)
    last = first.conversation[-1] if first.conversation else None
    if (
        not rest
        or rest[-1].get("role") != "user"
        or last is None
        or last[:2] != ("message", "user")
    ):
        raise _no_input(first)
    return system, text_of(rest[-1].get("content")) or "", rest[:-1]


def _tool_outputs(calls: list[RecordedCall]) -> dict[str, str]:
    """call id -> the tool result sent back to the model (first time it was sent)."""
    outputs: dict[str, str] = {}
    for call in calls:
        for item in call.conversation:
            if item[0] == "result":
                outputs.setdefault(item[1], item[2])
    return outputs


def _step(call: RecordedCall, tools: dict[str, Any]) -> dict[str, Any]:
    if call.error is not None:
        return {"error": dict(call.error)}
    reply = call.reply
    assert reply is not None
    step: dict[str, Any] = {}
    reasoning = reasoning_text(reply.reasoning)
    if reasoning is not None:
        step["reasoning"] = reasoning
    if reply.content is not None:
        step["content"] = reply.content
    if reply.tool_calls:
        step["tool_calls"] = []
        for call_id, name, arguments in reply.tool_calls:
            args, raw = parse_arguments(arguments)
            entry: dict[str, Any] = {"id": call_id, "name": name}
            if raw is not None:
                entry["raw_arguments"] = raw
            else:
                entry["arguments"] = args
            step["tool_calls"].append(entry)
            if name not in tools:
                step["unknown_tools"] = True
    if reply.finish_reason == "length" and not reply.tool_calls:
        step["finish_reason"] = "length"
    usage = reply.usage
    if isinstance(usage, dict) and usage.get("prompt_tokens") is not None:
        step["usage"] = {
            "prompt_tokens": int(usage.get("prompt_tokens") or 0),
            "completion_tokens": int(usage.get("completion_tokens") or 0),
        }
        # Kept as recorded: some providers count more than the two parts (cached or
        # reasoning tokens), and the frozen run's usage must be the recording's.
        if usage.get("total_tokens") is not None:
            step["usage"]["total_tokens"] = int(usage["total_tokens"])
    return step


def _outcome(on_call: int, text: str, flagged: bool = False) -> tuple[str, dict[str, Any]]:
    """("errors", spec) for a result that is a raised exception's text, else ("results",
    spec): an error result (``is_error``) for one its wire flagged (``flagged``) or in
    another failure form.

    A failed call stays a failure in the frozen run (status error, a red card), instead
    of a stub that returns its text as if all went well; the failure is read as the
    observer reads it (docs/wires.md#tool-failures), so the frozen run's status is the
    recording's.
    """
    raised = raised_exception(text)
    if raised is not None:
        return "errors", {"on_call": on_call, "raise": raised[1], "type": raised[0]}
    spec: dict[str, Any] = {"on_call": on_call, "returns": _returns(text)}
    if flagged or failure_form(text) is not None:
        spec["is_error"] = True  # sent as it came, the call error
    return "results", spec


def _failed(calls: list[RecordedCall]) -> set[str]:
    """The ids of the calls whose result a request sent back as failed, by its wire's
    flag (Anthropic ``is_error``, a Gemini response's ``error``) or its text."""
    failed: set[str] = set()
    for call in calls:
        wire = wire_named(call.api)
        found = wire.tool_results(wire.items(call.body))
        failed.update(call_id for call_id, result in found.items() if result.failed)
    return failed


def _results(
    calls: list[RecordedCall], specs: dict[str, dict[str, Any]]
) -> dict[str, dict[str, list[dict[str, Any]]]]:
    """Per tool, what its Nth executed call returned (``results``) or raised (``errors``).

    A stub counts the calls it runs; a call that failed validation never reaches it
    (with ``on_validation_error: retry`` its error message was still sent back), so
    the tools are built and each recorded call is validated as the loop would.
    """
    from harness.scenario._loader import build_tools

    try:
        built = build_tools(Scenario.model_validate({"tools": specs}))
    except (HarnessError, ValueError) as exc:
        raise FreezeError(f"the recorded tool definitions do not make stubs: {exc}") from None
    outputs, failed = _tool_outputs(calls), _failed(calls)
    counts: dict[str, int] = {}
    results: dict[str, dict[str, list[dict[str, Any]]]] = {}
    for call in calls:
        for call_id, name, arguments in call.reply.tool_calls if call.reply else []:
            if call_id not in outputs or name not in built:
                continue
            args, raw = parse_arguments(arguments)
            try:
                built[name].validate(
                    ToolCall(id=call_id or "", name=name, arguments=args, raw_arguments=raw)
                )
            except Exception:  # ToolArgumentsError, or a schema the stub cannot check
                continue
            counts[name] = counts.get(name, 0) + 1
            kind, spec = _outcome(counts[name], outputs[call_id], call_id in failed)
            results.setdefault(name, {}).setdefault(kind, []).append(spec)
    return results


def _mcp_results(tools: dict[str, dict[str, Any]], original: Scenario) -> None:
    """The tools of the original's MCP servers answer as their recording says, call by
    call (an ``isError`` result stays one), rather than as read from the conversation."""
    from harness.scenario._mcp_tools import recorded_stub_results

    for name, results in recorded_stub_results(original).items():
        if name not in tools:
            continue
        tools[name].pop("errors", None)
        tools[name]["results"] = [
            {**r, "returns": _returns(r["returns"])} if "returns" in r else r
            for r in results
            if "returns" in r
        ]
        errors = [r for r in results if "raise" in r]
        if errors:
            tools[name]["errors"] = errors


def output_tools(run: RecordedRun) -> list[str]:
    """The tool whose call ends the recording like an output tool's (a list of one, or
    empty): the last reply's only call, answered by no later request, to a tool called
    nowhere before in the run.

    A client stopped there (pydantic-ai's final_result, the Agents SDK's
    stop_on_first_tool). An output tool is one call that ends the run: a last reply of
    several calls, or of a tool the run called before (a loop), looks like a run an
    iteration limit or a stagnation guard stopped, which needs ``--scenario``.
    """
    calls = replayed_calls(run)
    last = calls[-1].reply
    if last is None or len(last.tool_calls) != 1:
        return []
    name = last.tool_calls[0][1]
    earlier = {n for call in calls[:-1] if call.reply for _, n, _ in call.reply.tool_calls}
    # A tool the request never offered is no output tool: the model made the call up.
    return [] if name in earlier or name in never_offered(calls[-1]) else [name]


def never_offered(call: RecordedCall) -> list[str]:
    """The tools the reply to ``call`` calls that its request did not offer."""
    if call.reply is None:
        return []
    specs = wire_named(call.api).tools(call.body.get("tools") or [])
    offered = {spec.name for spec in specs}
    return [name for _, name, _ in call.reply.tool_calls if name not in offered]


def stopped_by_limit(run: RecordedRun) -> bool:
    """Whether the recording ends on calls no later request answers that are not an
    output tool's (several at once, or a tool called before): a run its client stopped
    from outside, as an iteration limit does; the frozen run ends there by its limit."""
    last = replayed_calls(run)[-1].reply
    return last is not None and bool(last.tool_calls) and not output_tools(run)


def build_scenario(
    run: RecordedRun, *, description: str, original: Scenario | None = None
) -> dict[str, Any]:
    """The scenario (without ``expect``) whose script and stubs replay ``run``."""
    calls = replayed_calls(run)
    first = calls[0]
    system, user_input, history = _conversation_start(first)
    tools = _tool_specs(calls, original)
    for name, outcomes in _results(calls, tools).items():
        tools[name].update(outcomes)
    if original is not None:
        _mcp_results(tools, original)
    script = [_step(call, tools) for call in calls]
    if original is None:
        for name in output_tools(run):
            if name in tools:
                tools[name]["ends_run"] = True

    scenario: dict[str, Any] = {"description": description}
    agent: dict[str, Any] = {}
    if original is not None:
        agent = original.agent.model_dump(exclude_unset=True, exclude={"system"})
    if system is not None and history:
        # A run that continues a conversation starts from it as it stands: the loop sends
        # `history` as given, without agent.system in front.
        history = [{"role": "system", "content": system}, *history]
    elif system is not None:
        agent["system"] = system
    replies = sum(1 for call in calls if call.reply is not None)
    last = calls[-1].reply
    finished = last is not None and not last.tool_calls
    if original is None and finished and 2 * replies > _DEFAULT_MAX_ITERATIONS:
        # A long run that ended with an answer needed this many iterations.
        agent["max_iterations"] = 2 * replies
    elif original is None and stopped_by_limit(run):
        # Its client stopped it on calls no request answers: the limit ends it there too.
        agent["max_iterations"] = 2 * replies
    if agent:
        scenario["agent"] = agent
    scenario["input"] = user_input
    if history:
        scenario["history"] = history
    if tools:
        scenario["tools"] = tools
    scenario["llm"] = {"script": script}
    return scenario


def _first_text(call: RecordedCall, role: str) -> str | None:
    return next((str(i[2]) for i in call.conversation if i[:2] == ("message", role)), None)


def per_api(runs: list[RecordedRun]) -> list[RecordedRun]:
    """Each run's requests to each API as a run of its own, in order (a run that itself
    used two vendors, a fallback from one to the other, is two conversations for
    ``harness serve``: a request on one wire never continues another wire's)."""
    parts = []
    for run in runs:
        apis = dict.fromkeys(call.api for call in run.calls)
        for api in apis:
            parts.append(RecordedRun(run.number, [c for c in run.calls if c.api == api]))
    return parts


def conversation_rules(
    main: RecordedRun, others: list[RecordedRun], offered: dict[str, dict[str, Any]]
) -> list[dict[str, Any]]:
    """``llm.conversations`` for the conversations a target held beside ``main``: each
    matched by its first request's system text, with its first user text too when
    another conversation starts with the same system text. When they came on several
    APIs, each is matched by its wire too, and by its texts only when another one came
    on the same wire."""
    every = [main, *others]
    several = len({run.calls[0].api for run in every}) > 1
    rules = []
    for n, run in enumerate(others, 1):
        api = run.calls[0].api
        alike = [r.calls[0] for r in every if r.calls[0].api == api] if several else []
        match: dict[str, Any] = {"wire": api} if several else {}
        if not several or len(alike) > 1:
            match.update(_text_match(run.calls[0], alike or [r.calls[0] for r in every]))
        script = [_step(call, offered) for call in run.calls]
        rules.append({"name": f"conversation {n}", "match": match, "script": script})
    return rules


def _text_match(first: RecordedCall, firsts: list[RecordedCall]) -> dict[str, Any]:
    """What tells ``first`` from the other first requests ``firsts`` by its texts: its
    system text, and its user text when another one has the same system text."""
    systems = [_first_text(call, "system") for call in firsts]
    system, user = _first_text(first, "system"), _first_text(first, "user")
    match: dict[str, Any] = {}
    if system:
        match["system_contains"] = system
    if not system or systems.count(system) > 1:
        match["user_contains"] = user or ""
    return match


def build_target_scenario(
    run: RecordedRun,
    *,
    description: str,
    original: Scenario,
    conversations: list[RecordedRun] | None = None,
) -> dict[str, Any]:
    """The script of a target scenario's recording, for the same target (``--scenario``).

    The agent runs as it did: its own tools answer its calls and its client retries what
    it retried, so only the model's answers are frozen, every attempt included (an error
    answer its client retried stays a step: the client retries it again). The other
    conversations it held during the run (``conversations``: a sub-agent's) become
    ``llm.conversations``.
    """
    every = [call for r in [run, *(conversations or [])] for call in r.calls]
    main, *others = per_api([run, *(conversations or [])])
    offered: dict[str, dict[str, Any]] = {name: {} for name in _tool_specs(every, None)}
    scenario: dict[str, Any] = {"description": description}
    if original.tags:
        scenario["tags"] = list(original.tags)
    assert original.target is not None
    scenario["target"] = original.target.model_dump(exclude_unset=True)
    # The one agent setting a target has: its stagnation window (observe or stop).
    agent = original.agent.model_dump(exclude_unset=True, include={"stagnation"})
    if agent:
        scenario["agent"] = agent
    if original.input is not None:
        scenario["input"] = original.input
    if original.tools:
        # Served over MCP: as the original defines them for a first run, whose answers
        # then make them stubs (harness.freeze._served).
        scenario["tools"] = served_tools(original)
    scenario["llm"] = {"script": [_step(call, offered) for call in main.calls]}
    if others:
        scenario["llm"]["conversations"] = conversation_rules(main, others, offered)
    return scenario
