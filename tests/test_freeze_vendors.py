"""Freezing a run that used two vendors: pydantic-ai's ``FallbackModel`` (Chat Completions
first, the Gemini API when it fails), written as pydantic-ai's docs show, run as a target
and recorded for real through harness's proxy, each vendor's upstream another harness
server on 127.0.0.1.

``harness serve`` holds a conversation per wire (a request on one wire never continues
another wire's), so the frozen scenario scripts the first vendor's requests in
``llm.script`` and the other's in ``llm.conversations``, matched by ``wire``.
"""

from __future__ import annotations

import textwrap

import pytest
import yaml

from harness.cli import main
from harness.scenario import run_scenario
from harness.serve import running_server

pytest.importorskip("pydantic_ai")
pytest.importorskip("google.genai")

AGENT = """
from pydantic_ai import Agent
from pydantic_ai.models.fallback import FallbackModel
from pydantic_ai.models.google import GoogleModel
from pydantic_ai.models.openai import OpenAIChatModel
from pydantic_ai.providers.google import GoogleProvider
from pydantic_ai.providers.openai import OpenAIProvider

WEATHER = {"Paris": "18C, cloudy", "Rome": "24C, sunny"}


def get_weather(city: str) -> str:
    \"\"\"The weather in a city.\"\"\"
    return WEATHER[city]


async def answer(question: str) -> str:
    model = FallbackModel(
        OpenAIChatModel("gpt-4o-mini", provider=OpenAIProvider()),
        GoogleModel("gemini-3.5-flash-lite", provider=GoogleProvider()),
    )
    agent = Agent(model, tools=[get_weather], instructions="Answer with the tools.")
    return (await agent.run(question)).output
"""

# Chat Completions refuses (400: the SDK does not retry it), so FallbackModel asks Gemini,
# for this request and the next ones (each starts with the first model again).
OPENAI_STEPS = [
    {"error": {"status": 400, "message": "This model is not available in your region."}},
    {"error": {"status": 400, "message": "This model is not available in your region."}},
]
GEMINI_STEPS = [
    {"tool_calls": [{"get_weather": {"city": "Paris"}}]},
    {"content": "It is 18C and cloudy in Paris."},
]
KEYS = {"OPENAI_API_KEY": "sk-fallback-0123456789", "GEMINI_API_KEY": "AIzaFallback0123456789"}


@pytest.fixture
def project(tmp_path, monkeypatch, fresh_plugins):
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "t"\n')
    (tmp_path / "fallback_agent.py").write_text(AGENT)
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    for name in ("OPENAI_BASE_URL", "GOOGLE_GEMINI_BASE_URL", "GOOGLE_API_KEY", *KEYS):
        monkeypatch.delenv(name, raising=False)
    return tmp_path


def test_a_run_that_used_two_vendors_freezes_into_a_conversation_per_vendor(
    project, monkeypatch, capsys
):
    path = project / "fallback.scenario.yaml"
    path.write_text(
        textwrap.dedent(
            """\
            target: {python: "fallback_agent:answer", timeout: 60}
            input: Weather in Paris?
            llm: {provider: openai, model: gpt-4o-mini, cassette: fallback.yaml}
            """
        )
    )
    with (
        running_server(OPENAI_STEPS) as openai_url,
        running_server(GEMINI_STEPS) as gemini_url,
        monkeypatch.context() as m,
    ):
        m.setenv("OPENAI_BASE_URL", openai_url)
        m.setenv("GOOGLE_GEMINI_BASE_URL", gemini_url.removesuffix("/v1"))
        for name, key in KEYS.items():
            m.setenv(name, key)
        recorded = run_scenario(path, record_mode="once")
    assert recorded.final.content == "It is 18C and cloudy in Paris.", recorded.final
    hosts = [
        i["request"]["uri"]
        for i in yaml.safe_load((project / "fallback.yaml").read_text())["interactions"]
    ]
    assert sum("chat/completions" in h for h in hosts) == 2
    assert sum("generateContent" in h for h in hosts) == 2

    out = project / "frozen.scenario.yaml"
    assert main(["freeze", "--scenario", str(path), "-o", str(out)]) == 0
    err = capsys.readouterr().err
    assert "the run's requests went to 2 APIs (Chat Completions, Gemini API)" in err
    llm = yaml.safe_load(out.read_text())["llm"]
    assert [step["error"]["status"] for step in llm["script"]] == [400, 400]
    (gemini,) = llm["conversations"]
    assert gemini["match"] == {"wire": "gemini"}
    assert [sorted(step) for step in gemini["script"]] == [
        ["tool_calls", "usage"],
        ["content", "usage"],
    ]

    replayed = run_scenario(out)
    assert replayed.status == "passed", [e for e in replayed.expectations if not e.ok]
    assert replayed.final.content == recorded.final.content
    assert [(c.name, c.result) for c in replayed.tool_calls] == [("get_weather", "18C, cloudy")]
