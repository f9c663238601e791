"""Recordings whose tool calls came without an id: the client's own ids are used.

Some OpenAI-compatible servers stream tool calls without ids; clients invent them
(pydantic-ai: ``pyd_ai_<hex>``) and send them back. Recorded here for real: pydantic-ai,
streaming, against ``harness serve`` with a script step whose call has ``id: null``,
through plain vcrpy.
"""

from __future__ import annotations

import asyncio
import json
import textwrap

import pytest
import vcr
import yaml

from harness.freeze import freeze
from harness.scenario import run_scenario
from harness.serve import running_server

pydantic_ai = pytest.importorskip("pydantic_ai", reason="pydantic-ai is a test extra")

STEPS = [
    {"tool_calls": [{"id": None, "name": "get_time", "arguments": {"city": "Paris"}}]},
    {"content": "It is noon in Paris."},
]


def _record(path) -> str:
    """Run a real pydantic-ai agent against serve, recorded by plain vcrpy into ``path``."""
    from pydantic_ai import Agent
    from pydantic_ai.models.openai import OpenAIChatModel
    from pydantic_ai.providers.openai import OpenAIProvider

    with running_server(STEPS) as url:
        model = OpenAIChatModel("gpt-4o-mini", provider=OpenAIProvider(base_url=url, api_key="x"))
        agent = Agent(model)

        @agent.tool_plain
        def get_time(city: str) -> str:
            """The time in a city."""
            return f"12:00 in {city}"

        async def ask() -> str:
            async with agent.run_stream("What time is it in Paris?") as streamed:
                return await streamed.get_output()

        with vcr.use_cassette(str(path), record_mode="all", filter_headers=["authorization"]):
            return asyncio.run(ask())


@pytest.fixture
def recording(tmp_path):
    path = tmp_path / "no-ids.yaml"
    assert _record(path) == "It is noon in Paris."
    return path


def test_the_served_reply_carries_no_id_and_the_client_makes_one_up(recording):
    interactions = yaml.safe_load(recording.read_text())["interactions"]
    body = interactions[0]["response"]["body"]["string"]
    chunks = [json.loads(line[6:]) for line in body.splitlines() if line.startswith("data: {")]
    deltas = [c["choices"][0]["delta"] for c in chunks if c["choices"]]
    opening = next(d["tool_calls"][0] for d in deltas if d.get("tool_calls"))
    assert opening["id"] is None
    second = json.loads(interactions[1]["request"]["body"])
    invented = second["messages"][1]["tool_calls"][0]["id"]
    assert invented.startswith("pyd_ai_")


def test_freeze_takes_the_clients_ids_and_the_frozen_scenario_replays_the_recording(
    recording, tmp_path
):
    out = tmp_path / "frozen.scenario.yaml"
    frozen = freeze(recording, output=out)
    data = yaml.safe_load(frozen.text)
    ((call,),) = [s["tool_calls"] for s in data["llm"]["script"] if "tool_calls" in s]
    assert call["id"].startswith("pyd_ai_") and call["name"] == "get_time"
    out.write_text(frozen.text, encoding="utf-8")
    result = run_scenario(out)
    assert result.status == "passed", result.expectations
    assert [(c.id, c.name, c.arguments) for c in result.tool_calls] == [
        (call["id"], "get_time", {"city": "Paris"})
    ]


def test_harness_run_replays_the_recording_through_its_own_loop(recording, tmp_path):
    scenario = tmp_path / "replay.scenario.yaml"
    scenario.write_text(
        textwrap.dedent(
            f"""\
            input: What time is it in Paris?
            tools:
              get_time:
                parameters: {{city: str}}
                returns: "12:00 in {{{{ args.city }}}}"
            llm: {{provider: openai, model: gpt-4o-mini, cassette: {recording}, match: sequential, stream: true}}
            expect:
              termination: completed
              tool_calls: {{count: {{get_time: 1}}}}
              final: {{equals: It is noon in Paris.}}
            """
        ),
        encoding="utf-8",
    )
    result = run_scenario(scenario)
    assert result.status == "passed", [e for e in result.expectations if not e.ok]
