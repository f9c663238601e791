"""`harness serve` as faithful as the real API: chained Responses requests, and a scripted
reply that does not fit the request is refused.

Real clients over real HTTP on 127.0.0.1: the openai SDK, the Agents SDK with
``auto_previous_response_id``, pydantic-ai with ``openai_previous_response_id='auto'``.
"""

from __future__ import annotations

import asyncio
import json

import openai
import pytest

from harness.serve import running_server

WEATHER = {
    "type": "function",
    "name": "get_weather",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
}
CHAT_WEATHER = {"type": "function", "function": {k: v for k, v in WEATHER.items() if k != "type"}}

STEPS = [
    {"tool_calls": [{"get_weather": {"city": "Paris"}}, {"get_weather": {"city": "Rome"}}]},
    {"tool_calls": [{"get_weather": {"city": "Oslo"}}]},
    {"content": "Sunny in Paris and Rome, snow in Oslo."},
]


def client(url: str) -> openai.OpenAI:
    return openai.OpenAI(base_url=url, api_key="sk-test", max_retries=0)


def outputs(response) -> list[dict]:
    return [
        {"type": "function_call_output", "call_id": item.call_id, "output": "sunny"}
        for item in response.output
        if item.type == "function_call"
    ]


@pytest.mark.parametrize("stream", [False, True], ids=["plain", "stream"])
def test_a_chained_request_continues_the_chain_it_names(stream):
    with running_server(STEPS) as url, client(url) as sdk:

        def create(**kwargs):
            if not stream:
                return sdk.responses.create(model="m", tools=[WEATHER], **kwargs)
            with sdk.responses.stream(model="m", tools=[WEATHER], **kwargs) as events:
                return events.get_final_response()

        first = create(input="Weather in Paris, Rome and Oslo?")
        assert first.id == "resp_harness_1"
        # Only the new items: the earlier ones are in the chain.
        second = create(input=outputs(first), previous_response_id=first.id)
        assert [c.name for c in second.output] == ["get_weather"]
        assert second.previous_response_id == "resp_harness_1"
        third = create(input=outputs(second), previous_response_id=second.id)
    assert third.output_text == "Sunny in Paris and Rome, snow in Oslo."
    assert third.id == "resp_harness_3"


def test_an_unknown_previous_response_gets_the_real_apis_400():
    with running_server(STEPS) as url, client(url) as sdk:
        for unknown in ("resp_0d0ac3f7be738fc0", "resp_harness_9"):
            with pytest.raises(openai.BadRequestError) as caught:
                sdk.responses.create(model="m", input="hi", previous_response_id=unknown)
            error = caught.value.body
            assert error["message"] == f"Previous response with id '{unknown}' not found."
            assert error["code"] == "previous_response_not_found"
            assert error["param"] == "previous_response_id"


def test_a_chained_reasoning_request_sends_back_only_its_own_rounds():
    steps = [{"tool_calls": [{"get_weather": {"city": "Paris"}}]}, {"content": "Sunny."}]
    include = ["reasoning.encrypted_content"]
    with running_server(steps) as url, client(url) as sdk:
        first = sdk.responses.create(model="m", input="Paris?", tools=[WEATHER], include=include)
        second = sdk.responses.create(
            model="m",
            input=outputs(first),
            tools=[WEATHER],
            include=include,
            previous_response_id=first.id,
        )
    assert second.output_text == "Sunny."


def test_the_agents_sdk_chains_through_serve_to_the_scripted_answer():
    agents = pytest.importorskip("agents", reason="openai-agents is a test extra")
    seen: list[str] = []

    @agents.function_tool
    def get_weather(city: str) -> str:
        """The weather in a city."""
        seen.append(city)
        return f"sunny in {city}"

    async def run(url: str):
        async with openai.AsyncOpenAI(base_url=url, api_key="sk-test") as sdk:
            model = agents.OpenAIResponsesModel("gpt-4o-mini", sdk)
            agent = agents.Agent(name="weather", model=model, tools=[get_weather])
            return await agents.Runner.run(
                agent, "Weather in Paris, Rome and Oslo?", auto_previous_response_id=True
            )

    agents.set_tracing_disabled(True)
    with running_server(STEPS) as url:
        result = asyncio.run(run(url))
    assert result.final_output == "Sunny in Paris and Rome, snow in Oslo."
    # Paris and Rome came in one reply: the framework runs them concurrently.
    assert sorted(seen[:2]) == ["Paris", "Rome"] and seen[2:] == ["Oslo"]
    assert [r.response_id for r in result.raw_responses] == [
        "resp_harness_1",
        "resp_harness_2",
        "resp_harness_3",
    ]


def test_pydantic_ai_chains_through_serve_to_the_scripted_answer():
    pytest.importorskip("pydantic_ai", reason="pydantic-ai is a test extra")
    from pydantic_ai import Agent
    from pydantic_ai.models.openai import OpenAIResponsesModel, OpenAIResponsesModelSettings
    from pydantic_ai.providers.openai import OpenAIProvider

    seen: list[str] = []
    bodies: list[dict] = []

    async def keep(request) -> None:
        bodies.append(json.loads(request.content))

    async def run(url: str) -> str:
        import httpx2 as httpx

        async with (
            httpx.AsyncClient(event_hooks={"request": [keep]}) as http,
            openai.AsyncOpenAI(
                base_url=url, api_key="sk-test", http_client=http, max_retries=0
            ) as sdk,
        ):
            provider = OpenAIProvider(openai_client=sdk)
            settings = OpenAIResponsesModelSettings(openai_previous_response_id="auto")
            agent = Agent(OpenAIResponsesModel("gpt-4o-mini", provider=provider))

            @agent.tool_plain
            def get_weather(city: str) -> str:
                """The weather in a city."""
                seen.append(city)
                return f"sunny in {city}"

            result = await agent.run("Weather in Paris, Rome and Oslo?", model_settings=settings)
            return result.output

    with running_server(STEPS) as url:
        answer = asyncio.run(run(url))
    assert answer == "Sunny in Paris and Rome, snow in Oslo."
    # Paris and Rome came in one reply: the framework runs them concurrently.
    assert sorted(seen[:2]) == ["Paris", "Rome"] and seen[2:] == ["Oslo"]
    # It really chained: the later requests name the previous response.
    chain = [b.get("previous_response_id") for b in bodies]
    assert chain == [None, "resp_harness_1", "resp_harness_2"], bodies


# -- a scripted reply that does not fit the request -------------------------------------------


def _error(call) -> dict:
    with pytest.raises(openai.BadRequestError) as caught:
        call()
    assert caught.value.status_code == 400
    return caught.value.body


@pytest.mark.parametrize("api", ["chat", "responses"])
def test_a_step_calling_a_tool_the_request_does_not_offer_is_a_400(api):
    steps = [{"content": "Hello."}, {"tool_calls": [{"get_weather": {"city": "Paris"}}]}]
    other = {**WEATHER, "name": "get_time"}
    chat_other = {"type": "function", "function": {**CHAT_WEATHER["function"], "name": "get_time"}}
    history = [
        {"role": "user", "content": "Hi"},
        {"role": "assistant", "content": "Hello."},
        {"role": "user", "content": "Weather?"},
    ]
    with running_server(steps) as url, client(url) as sdk:
        if api == "chat":

            def ask(**kwargs):
                return sdk.chat.completions.create(model="m", messages=history, **kwargs)

            tools, others = [CHAT_WEATHER], [chat_other]
        else:

            def ask(**kwargs):
                return sdk.responses.create(model="m", input=history, **kwargs)

            tools, others = [WEATHER], [other]
        no_tools = _error(ask)
        other_tools = _error(lambda: ask(tools=others))
        none = _error(lambda: ask(tools=tools, tool_choice="none"))
        assert ask(tools=tools) is not None  # the same step fits a request offering the tool
    assert no_tools["message"] == (
        "script step 2 (reply 2) calls get_weather, but the request offers no tools: the "
        "script does not fit the agent's request (fix the step, or the agent's tools)"
    )
    assert no_tools["code"] == "script_step_mismatch"
    assert (
        "script step 2 (reply 2) calls get_weather, but the request offers only get_time"
        in (other_tools["message"])
    )
    assert 'calls get_weather, but the request says tool_choice "none"' in none["message"]


def test_an_error_step_before_a_reply_does_not_shift_the_step_named():
    steps = [
        {"error": {"status": 429, "message": "slow down"}},
        {"tool_calls": [{"get_weather": {"city": "Paris"}}]},
    ]
    with running_server(steps) as url, client(url) as sdk:
        with pytest.raises(openai.RateLimitError):
            sdk.responses.create(model="m", input="Paris?")
        error = _error(lambda: sdk.responses.create(model="m", input="Paris?"))
    assert error["message"].startswith("script step 2 (reply 1) calls get_weather, but")


def test_a_step_marked_unknown_tools_is_served_whatever_the_request_offers():
    steps = [{"tool_calls": [{"get_weather": {"city": "Paris"}}], "unknown_tools": True}]
    with running_server(steps) as url, client(url) as sdk:
        reply = sdk.responses.create(model="m", input="Paris?")
    assert [item.name for item in reply.output] == ["get_weather"]
