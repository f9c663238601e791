"""The tools a Gemini request offers, as harness serve's fit check reads them
(docs/wires.md#gemini): every declared function, whichever way the client spelled the
declarations and their schemas, and nothing else.

The client is the official ``google-genai`` SDK over HTTP to harness's server on 127.0.0.1.
"""

from __future__ import annotations

import pytest

from harness.serve import running_server
from harness.wires import GEMINI

genai = pytest.importorskip("google.genai")
types = pytest.importorskip("google.genai.types")
errors = pytest.importorskip("google.genai.errors")


def _config() -> object:
    """Two tools: a function declared with a Gemini ``Schema`` (upper-case types, as the
    SDK sends a declaration built from types), and Google Search (no function)."""
    schema = types.Schema(type="OBJECT", properties={"city": types.Schema(type="STRING")})
    weather = types.FunctionDeclaration(name="get_weather", parameters=schema)
    return types.GenerateContentConfig(
        tools=[types.Tool(function_declarations=[weather]), types.Tool(google_search={})],
        automatic_function_calling=types.AutomaticFunctionCallingConfig(disable=True),
    )


def _client(url: str) -> object:
    root = url.removesuffix("/v1")
    return genai.Client(api_key="k", http_options=types.HttpOptions(base_url=root))


def test_a_declared_function_is_served_and_an_undeclared_one_refused() -> None:
    """The step calling the declared function is answered; the next, calling a function
    the request does not declare, is a 400 naming the step, the call and the offer."""
    steps = [
        {"tool_calls": [{"get_weather": {"city": "Paris"}}]},
        {"tool_calls": [{"google_search": {"q": "Paris"}}]},
    ]
    with running_server(steps) as url:
        client = _client(url)
        answer = client.models.generate_content(model="m", contents="Weather?", config=_config())
        call = answer.function_calls[0]
        assert (call.name, call.args) == ("get_weather", {"city": "Paris"})
        history = [
            types.Content(role="user", parts=[types.Part(text="Weather?")]),
            answer.candidates[0].content,
            types.Content(
                role="user",
                parts=[types.Part.from_function_response(name="get_weather", response={})],
            ),
        ]
        with pytest.raises(errors.ClientError) as refused:
            client.models.generate_content(model="m", contents=history, config=_config())
    assert refused.value.code == 400
    assert "script step 2" in refused.value.message
    assert "calls google_search, but the request offers only get_weather" in refused.value.message


def test_offer_reads_both_spellings_and_the_calling_config() -> None:
    """camelCase and snake_case declarations alike; ``mode: ANY`` with one allowed name
    forces it; tools that are not a list offer nothing."""
    body = {
        "tools": [
            {"functionDeclarations": [{"name": "a"}, {"description": "no name"}]},
            {"function_declarations": [{"name": "b", "parameters": {"type": "OBJECT"}}]},
            {"codeExecution": {}},
        ]
    }
    assert GEMINI.tool_offer(body).names == ["a", "b"]
    config = {"function_calling_config": {"mode": "any", "allowed_function_names": ["b"]}}
    forced = GEMINI.tool_offer({**body, "tool_config": config})
    assert (forced.names, forced.forced) == (["b"], "b")
    assert GEMINI.tool_offer(
        {**body, "toolConfig": {"functionCallingConfig": {"mode": "NONE"}}}
    ).none
    assert GEMINI.tool_offer({"tools": "junk"}).names == []
