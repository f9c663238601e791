"""The served model's metadata on every API (issue 43, docs/recording.md#harness-serve-a-scenarios-model-over-http).

Some clients ask for the model before they call it: LlamaIndex's ``GoogleGenAI`` reads its
token limits at construction (``client.models.get``), an Anthropic agent may check its model
with ``client.models.retrieve``. Each SDK asks harness's server on 127.0.0.1 and reads the
answer into its own types.
"""

from __future__ import annotations

import pytest

from harness.serve import running_server
from harness.serve._models import ANTHROPIC_LIMITS, GEMINI_LIMITS

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


# -- recorded through the proxy ------------------------------------------------------------

META_AGENTS = {
    # LlamaIndex's GoogleGenAI does this at construction (models.get), then generates.
    "gemini": (
        "google.genai",
        "gemini-2.5-flash",
        """
        from google import genai


        def answer(question):
            client = genai.Client()
            info = client.models.get(model="gemini-2.5-flash")
            reply = client.models.generate_content(model="gemini-2.5-flash", contents=question)
            return f"{info.input_token_limit} {reply.text}"
        """,
        GEMINI_LIMITS["inputTokenLimit"],
    ),
    "anthropic": (
        "anthropic",
        "claude-sonnet-4-5",
        """
        import anthropic


        def answer(question):
            client = anthropic.Anthropic()
            info = client.models.retrieve("claude-sonnet-4-5")
            reply = client.messages.create(
                model="claude-sonnet-4-5",
                max_tokens=1024,
                messages=[{"role": "user", "content": question}],
            )
            return f"{info.max_input_tokens} {reply.content[0].text}"
        """,
        ANTHROPIC_LIMITS["max_input_tokens"],
    ),
}
UPSTREAM = {
    "gemini": ("GOOGLE_GEMINI_BASE_URL", "GEMINI_API_KEY"),
    "anthropic": ("ANTHROPIC_BASE_URL", "ANTHROPIC_API_KEY"),
}


@pytest.mark.parametrize("vendor", sorted(META_AGENTS))
def test_a_target_asking_for_its_model_records_and_replays(
    tmp_path, monkeypatch, fresh_plugins, vendor
):
    """The recording proxy sends a metadata request to the vendor it belongs to (told by
    its path and headers, as harness serve tells it), at the path the vendor serves it."""
    import textwrap

    from harness.scenario import run_scenario

    module, model, code, limit = META_AGENTS[vendor]
    pytest.importorskip(module)
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "t"\n')
    (tmp_path / f"meta_{vendor}.py").write_text(textwrap.dedent(code))
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(__import__("sys").modules, f"meta_{vendor}", raising=False)
    for name in ("OPENAI_BASE_URL", "OPENAI_API_KEY", "GOOGLE_API_KEY", *UPSTREAM[vendor]):
        monkeypatch.delenv(name, raising=False)
    path = tmp_path / "meta.scenario.yaml"
    path.write_text(
        f"target: {{python: 'meta_{vendor}:answer', timeout: 60}}\n"
        "input: Say hello.\n"
        f"llm: {{provider: {vendor}, model: {model}, cassette: meta.yaml}}\n"
        f"expect: {{termination: completed, final: {{equals: '{limit} hello'}}}}\n"
    )
    base, key = UPSTREAM[vendor]
    with running_server(STEPS) as url:
        monkeypatch.setenv(base, url.removesuffix("/v1"))
        monkeypatch.setenv(key, "sk-upstream-key-0123456789")
        recorded = run_scenario(path, record_mode="once")
    monkeypatch.delenv(base)
    monkeypatch.delenv(key)

    assert recorded.status == "passed", (recorded.final, recorded.failed_expectations)
    replayed = run_scenario(path)  # the upstream is gone: the cassette answers both
    assert replayed.status == "passed", (replayed.final, replayed.failed_expectations)
