"""The served model's metadata on every API (issue 43, docs/recording.md#harness-serve-a-scenarios-model-over-http).

Some clients ask for the model before they call it: LlamaIndex's ``GoogleGenAI`` reads its
token limits at construction (``client.models.get``), an Anthropic agent may check its model
with ``client.models.retrieve``. Each SDK asks harness's server on 127.0.0.1 and reads the
answer into its own types.
"""

from __future__ import annotations

import pytest

from harness.serve import running_server
from harness.serve.models import ANTHROPIC_LIMITS, GEMINI_LIMITS

STEPS = [{"content": "hello"}]


def test_google_genai_gets_the_models_token_limits_on_both_api_versions():
    genai = pytest.importorskip("google.genai")
    from google.genai import types

    with running_server(STEPS) as url:
        root = url.removesuffix("/v1")
        for version in ("v1beta", "v1"):  # google-genai 2.x asks /v1beta, 3.x /v1
            options = types.HttpOptions(base_url=root, api_version=version)
            client = genai.Client(api_key="k", http_options=options)

            model = client.models.get(model="gemini-2.5-flash")

            assert model.name == "models/gemini-2.5-flash"
            assert model.input_token_limit == GEMINI_LIMITS["inputTokenLimit"]
            assert model.output_token_limit == GEMINI_LIMITS["outputTokenLimit"]
            listed = [m.name for m in client.models.list()]
            assert listed == ["models/harness-script"]


def test_anthropic_retrieves_and_lists_the_model():
    anthropic = pytest.importorskip("anthropic")

    with running_server(STEPS) as url:
        client = anthropic.Anthropic(api_key="k", base_url=url.removesuffix("/v1"))

        model = client.models.retrieve("claude-sonnet-4-5")
        listed = client.models.list()

    assert (model.type, model.id, model.lifecycle) == ("model", "claude-sonnet-4-5", "active")
    assert model.max_input_tokens == ANTHROPIC_LIMITS["max_input_tokens"]
    assert [m.id for m in listed.data] == ["harness-script"]


def test_openai_still_gets_its_own_model_objects():
    openai = pytest.importorskip("openai")

    with running_server(STEPS) as url:
        client = openai.OpenAI(api_key="k", base_url=url)
        model = client.models.retrieve("gpt-4o-mini")
        listed = client.models.list()

    assert (model.id, model.object, model.owned_by) == ("gpt-4o-mini", "model", "harness")
    assert [m.id for m in listed.data] == ["harness-script"]


def test_llamaindex_google_genai_is_built_from_the_served_metadata(monkeypatch):
    pytest.importorskip("llama_index.llms.google_genai")
    from google.genai import types
    from llama_index.llms.google_genai import GoogleGenAI

    with running_server(STEPS) as url:
        monkeypatch.setenv("GOOGLE_API_KEY", "k")
        options = types.HttpOptions(base_url=url.removesuffix("/v1"))

        # As LlamaIndex's docs build it: no max_tokens nor context_window, so it asks.
        llm = GoogleGenAI(model="gemini-2.5-flash", http_options=options)

    # LlamaIndex counts the output in the window.
    window = GEMINI_LIMITS["inputTokenLimit"] + GEMINI_LIMITS["outputTokenLimit"]
    assert llm.metadata.context_window == window
    assert llm.metadata.num_output == GEMINI_LIMITS["outputTokenLimit"]
