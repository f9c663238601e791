"""Clients built when a target's module is imported reach harness (issue 43,
docs/external.md#clients-built-when-the-module-is-imported).

pydantic-ai's docs build the agent at module level (``agent = Agent("anthropic:...")``),
and so do many agents with ``client = OpenAI()`` or ``client = genai.Client()``: the client
reads its key and base URL when the module is imported. harness imports the module with the
served environment in place, at the process's one address for python targets, and serves
every run there: each agent here runs twice in one process, against two servers' scripts,
with none of the user's keys set.
"""

from __future__ import annotations

import sys
import textwrap

import pytest

from harness.scenario import run_scenario

AGENTS = {
    "pydantic_anthropic": (
        "pydantic_ai.models.anthropic",
        """
        from pydantic_ai import Agent

        agent = Agent("anthropic:claude-sonnet-4-5", instructions="Be concise.")


        async def answer(question):
            return (await agent.run(question)).output
        """,
    ),
    "pydantic_google": (
        "pydantic_ai.models.google",
        """
        from pydantic_ai import Agent

        agent = Agent("google:gemini-2.5-flash", instructions="Be concise.")


        async def answer(question):
            return (await agent.run(question)).output
        """,
    ),
    "pydantic_openai": (
        "pydantic_ai.models.openai",
        """
        from pydantic_ai import Agent

        agent = Agent("openai:gpt-4o-mini", instructions="Be concise.")


        def answer(question):
            return agent.run_sync(question).output
        """,
    ),
    # The Agents SDK's quickstart: a module-level Agent, run with Runner.run_sync, whose
    # default client (one httpx pool for the process) keeps its connection to the address
    # between runs; run_sync runs on the calling thread's event loop.
    "agents_sdk": (
        "agents",
        """
        from agents import Agent, Runner

        agent = Agent(name="Assistant", instructions="Be concise.")


        def answer(question):
            return Runner.run_sync(agent, question).final_output
        """,
    ),
    "openai_client": (
        "openai",
        """
        from openai import OpenAI

        client = OpenAI()


        def answer(question):
            reply = client.chat.completions.create(
                model="gpt-4o-mini", messages=[{"role": "user", "content": question}]
            )
            return reply.choices[0].message.content
        """,
    ),
    "anthropic_client": (
        "anthropic",
        """
        import anthropic

        client = anthropic.Anthropic()


        def answer(question):
            reply = client.messages.create(
                model="claude-sonnet-4-5",
                max_tokens=1024,
                messages=[{"role": "user", "content": question}],
            )
            return reply.content[0].text
        """,
    ),
    "genai_client": (
        "google.genai",
        """
        from google import genai

        client = genai.Client()


        def answer(question):
            return client.models.generate_content(
                model="gemini-2.5-flash", contents=question
            ).text
        """,
    ),
}

USERS_OWN = (
    "OPENAI_API_KEY",
    "OPENAI_BASE_URL",
    "ANTHROPIC_API_KEY",
    "ANTHROPIC_BASE_URL",
    "GOOGLE_API_KEY",
    "GEMINI_API_KEY",
    "GOOGLE_GEMINI_BASE_URL",
)


@pytest.fixture
def project(tmp_path, monkeypatch, fresh_plugins):
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "t"\n')
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    for name in USERS_OWN:  # a new user: no key of any vendor set
        monkeypatch.delenv(name, raising=False)
    return tmp_path


def write_agent(project, monkeypatch, agent: str) -> str:
    module = f"module_level_{agent}"
    (project / f"{module}.py").write_text(textwrap.dedent(AGENTS[agent][1]))
    monkeypatch.delitem(sys.modules, module, raising=False)  # imported by this test only
    return module


def scenario(project, module: str, reply: str):
    path = project / f"{module}_{len(reply)}.scenario.yaml"
    path.write_text(
        textwrap.dedent(
            f"""\
            target: {{python: "{module}:answer", timeout: 60}}
            input: Say hello.
            llm:
              script:
                - content: {reply}
            expect: {{termination: completed, script_consumed: true, final: {{equals: {reply}}}}}
            """
        )
    )
    return path


@pytest.mark.parametrize("agent", sorted(AGENTS))
def test_a_client_built_at_import_reaches_every_run(project, monkeypatch, agent):
    pytest.importorskip(AGENTS[agent][0])
    module = write_agent(project, monkeypatch, agent)

    # Two scenarios, two runs: the module is imported once, when the first one loads.
    first = run_scenario(scenario(project, module, "Hello."))
    second = run_scenario(scenario(project, module, "Hello again."))

    for result in (first, second):
        assert result.status == "passed", (result.final, result.failed_expectations)
        assert result.llm_calls == 1


def test_a_client_used_between_runs_is_told_how_to_build_it(project, monkeypatch):
    pytest.importorskip("openai")
    import openai

    module = write_agent(project, monkeypatch, "openai_client")
    assert run_scenario(scenario(project, module, "Hello.")).status == "passed"
    client = sys.modules[module].client

    # No run is served now: the client's request is answered with the fix, not served.
    with pytest.raises(openai.APIStatusError) as raised:
        client.with_options(max_retries=0).models.list()

    assert raised.value.status_code == 421
    assert "build it inside the target function, or take base_url" in str(raised.value)


def test_a_second_run_at_once_is_served_on_a_port_of_its_own():
    from harness.external._address import ADDRESS

    with ADDRESS.serving(object()) as first, ADDRESS.serving(object()) as second:
        assert first == ADDRESS.url()
        assert second is None  # the caller serves it elsewhere
    with ADDRESS.serving(object()) as again:
        assert again == first
