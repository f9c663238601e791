"""Cassettes another project recorded against the real OpenAI API replay offline.

They are vanilla vcrpy cassettes (JSON string bodies, gzip `!!binary` responses,
Server-Sent Events; one from a provider that resends a tool call's id and name in
every chunk), replayed with `match: sequential` through the real openai SDK. The
tools return what the recorded tools returned.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from harness import Agent, tool
from harness.llm._config import LLMConfig, LLMContext
from harness.providers.openai import OpenAILLM

FOREIGN = Path(__file__).parent / "fixtures" / "foreign-cassettes"


@pytest.fixture(autouse=True)
def _no_openai_environment(monkeypatch):
    # No key, no base URL: the SDK would talk to api.openai.com if replay leaked.
    for name in ("OPENAI_API_KEY", "OPENAI_ORG_ID", "OPENAI_PROJECT_ID", "OPENAI_BASE_URL"):
        monkeypatch.delenv(name, raising=False)


@tool
def multiply(a: int, b: int) -> int:
    """Multiply two numbers."""
    return a * b


@tool
def lookup_population(country: str) -> int:
    """Returns the current population of the specified fictional country."""
    return 123124


@tool
def can_have_dragons(population: int) -> bool:
    """Returns True if the specified population can have dragons, False otherwise."""
    return population > 10000


@tool
def llm_version() -> str:
    """Return the installed version of llm."""
    return "0.fixed-version"


CASES = {
    "llm-test_tools-test_tool_use_basic.yaml": (
        "chat",
        True,
        [multiply],
        "What is 1231 * 2331?",
        [("multiply", {"a": 1231, "b": 2331}, 2869461)],
        "The result of \\( 1231 \\times 2331 \\) is \\( 2,869,461 \\).",
    ),
    "llm-test_tools-test_tool_use_chain_of_two_calls.yaml": (
        "chat",
        False,
        [lookup_population, can_have_dragons],
        "Can the country of Crumpet have dragons? Answer with only YES or NO",
        [
            ("lookup_population", {"country": "Crumpet"}, 123124),
            ("can_have_dragons", {"population": 123124}, True),
        ],
        "YES",
    ),
    "llm-test_tools_streaming-test_tools_streaming_variant_a.yaml": (
        "chat",
        True,
        [llm_version],
        "What is the current llm version?",
        [("llm_version", {}, "0.fixed-version")],
        "The current version of *llm* is **0.fixed-version**.",
    ),
    "llm-test_openai_responses-test_responses_tool_use.yaml": (
        "responses",
        False,
        [multiply],
        "What is 1231 * 2331? Use the multiply tool.",
        [("multiply", {"a": 1231, "b": 2331}, 2869461)],
        "1231 * 2331 = 2,869,461",
    ),
}


def test_every_foreign_cassette_of_simonw_llm_has_a_case():
    # simonw/llm's own (llm-test_*; llm-anthropic's plugin is another project). The
    # others are frozen instead (tests/test_freeze_corpus.py): their agents are other
    # frameworks' (handoffs, output tools), not harness's loop.
    assert sorted(p.name for p in FOREIGN.glob("llm-test*.yaml")) == sorted(CASES)


@pytest.mark.parametrize("name", sorted(CASES))
def test_foreign_cassette_replays_to_its_recorded_answer(name):
    api, stream, tools, prompt, calls, answer = CASES[name]
    cassette = FOREIGN / name
    before = hashlib.sha256(cassette.read_bytes()).hexdigest()
    config = LLMConfig(
        provider="openai",
        model="gpt-4o-mini",
        cassette=str(cassette),
        match="sequential",
        api=api,
        stream=stream,
    )
    llm = OpenAILLM(config.with_context(LLMContext(scenario_id=f"foreign::{name}")))
    result = Agent(llm=llm, tools=tools).run(prompt)
    assert result.termination == "completed", result.final
    assert result.final.content == answer
    assert [(c.name, c.arguments, c.result) for c in result.tool_calls] == calls
    assert all(c.status == "ok" for c in result.tool_calls)
    assert result.llm_calls == len(calls) + 1
    assert llm.remaining == 0
    assert result.usage["total_tokens"] > 0
    # Replay writes nothing, least of all into someone else's cassette.
    assert hashlib.sha256(cassette.read_bytes()).hexdigest() == before


def test_resent_ids_and_names_in_a_stream_are_not_doubled():
    # The provider behind this cassette resends id "0" and the name in every chunk:
    # the SDK's own accumulator would make them "00" and "llm_versionllm_version".
    name = "llm-test_tools_streaming-test_tools_streaming_variant_a.yaml"
    config = LLMConfig(
        provider="openai", model="m", cassette=str(FOREIGN / name), match="sequential", stream=True
    )
    llm = OpenAILLM(config.with_context(LLMContext()))
    result = Agent(llm=llm, tools=[llm_version]).run("What is the current llm version?")
    (call,) = result.tool_calls
    assert (call.id, call.name, call.arguments) == ("0", "llm_version", {})
