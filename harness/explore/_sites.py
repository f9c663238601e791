"""The fault sites of a run: every model call (per conversation), every call of a tool the
scenario defines (per tool and call number; served over MCP to a target, also an MCP
site), every sub-agent's model call and call (docs/explore.md#sites)."""

from __future__ import annotations

from collections import Counter
from typing import Any

from harness._results import ScenarioResult
from harness.events import LLMResponseEvent
from harness.explore._catalogue import Site
from harness.llm._faults import REPLY_FAULTS

__all__ = ["sites_of"]

# The statuses of a call that reached the tool (a stub counts it): it ran, or it raised.
_REACHED = ("ok", "error")


def sites_of(data: dict[str, Any], result: ScenarioResult) -> list[Site]:
    """The sites of ``result``, a run of the scenario mapping ``data``, in a fixed order:
    the model's calls, the sub-agents', then the tools' (and their MCP sites)."""
    target = data.get("target") is not None
    sites = _model_sites(data, result)
    tools = _mapping(data.get("tools"))
    agents = {
        name: spec["agent"]
        for name, spec in tools.items()
        if isinstance(spec, dict) and isinstance(spec.get("agent"), str)
    }
    sites += _agent_sites(data, result, agents)
    counts = Counter(
        record.name
        for record in result.tool_calls
        if record.status in _REACHED and record.name in tools
    )
    for name in sorted(counts):
        kind = "agents" if name in agents else "tools"
        for call in range(1, counts[name] + 1):
            sites.append(Site(kind, call, tool=name, agent=agents.get(name, "")))
            if target:
                sites.append(Site("mcp", call, tool=name))
    return sites


def _model_sites(data: dict[str, Any], result: ScenarioResult) -> list[Site]:
    """A site for each model reply of each conversation (the main one first)."""
    llm = _mapping(data.get("llm"))
    if not result.conversations:
        replies = sum(1 for event in result.events if isinstance(event, LLMResponseEvent))
        replies -= _inserted(llm, 0)
        return [Site("model", call) for call in range(1, max(0, replies) + 1)]
    rules = [rule.get("name") for rule in llm.get("conversations") or [] if isinstance(rule, dict)]
    most: dict[int, int] = {}
    for conversation in result.conversations:
        number = _rule_number(conversation.conversation, rules)
        if number is None:
            continue
        replies = sum(1 for e in conversation.events if isinstance(e, LLMResponseEvent))
        most[number] = max(most.get(number, 0), replies - _inserted(llm, number))
    return [
        Site("model", call, conversation=number)
        for number in sorted(most)
        for call in range(1, most[number] + 1)
    ]


def _inserted(llm: dict[str, Any], conversation: int) -> int:
    """The replies the conversation's faults insert (a spoiled reply takes a place): its
    sites are the scripted replies, so these are not counted."""
    count = 0
    for fault in llm.get("faults") or []:
        if not isinstance(fault, dict) or fault.get("kind") not in REPLY_FAULTS:
            continue
        which = fault.get("conversation")
        if (which or 0) == conversation or (conversation and which == _name_of(llm, conversation)):
            count += 1
    return count


def _name_of(llm: dict[str, Any], number: int) -> Any:
    rules = llm.get("conversations") or []
    return rules[number - 1].get("name") if 0 < number <= len(rules) else None


def _rule_number(name: str, rules: list[Any]) -> int | None:
    """0 for the main conversation, else its llm.conversations entry's number from 1."""
    if name == "main":
        return 0
    if name in rules:
        return rules.index(name) + 1
    if name.startswith("conversation ") and name.removeprefix("conversation ").isdigit():
        return int(name.removeprefix("conversation "))
    return None


def _agent_llm(data: dict[str, Any], agent: str) -> dict[str, Any]:
    return _mapping(_mapping(_mapping(data.get("agents")).get(agent)).get("llm"))


def _agent_sites(
    data: dict[str, Any], result: ScenarioResult, agents: dict[str, str]
) -> list[Site]:
    """A site for each model reply of each sub-agent, across its calls (its script goes
    on from one call to the next)."""
    replies: Counter[str] = Counter()
    for record in result.tool_calls:
        agent = agents.get(record.name)
        if agent is None or record.sub_run is None:
            continue
        replies[agent] += sum(1 for e in record.sub_run.events if isinstance(e, LLMResponseEvent))
    for agent in replies:
        replies[agent] = max(0, replies[agent] - _inserted(_agent_llm(data, agent), 0))
    return [
        Site("agents", call, agent=agent)
        for agent in sorted(replies)
        for call in range(1, replies[agent] + 1)
    ]


def _mapping(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}
