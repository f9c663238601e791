"""Secret values never reach results.json, the HTML report, pytest's output or the log.

Cassettes are covered in test_cassette.py. Here the secret arrives the way it does in
practice: a real tool reads the environment (echoes the key, or quotes it in an
exception), and a planner bug quotes it in a traceback.
"""

from __future__ import annotations

import logging
import sys

from scenario_texts import SESSION_TESTS

from harness import Agent, hookimpl
from harness.llm import ScriptedLLM

pytestmark = SESSION_TESTS

SECRETS = {
    "OPENAI_API_KEY": "sk-test-harness-LeakCanary0123456789",
    "OPENAI_ORG_ID": "org-LeakCanaryOrg42",
    "OPENAI_PROJECT_ID": "proj_LeakCanaryProject7",
}

LEAKY_TOOLS = """\
import os


def whoami() -> str:
    return "key=" + os.environ["OPENAI_API_KEY"] + " org=" + os.environ["OPENAI_ORG_ID"]


def login() -> str:
    raise PermissionError("rejected project " + os.environ["OPENAI_PROJECT_ID"])
"""

# A plugin with a bug that quotes the key: the "crash" scenario ends in error, and its
# error message is printed in pytest's failure text.
CRASHING_PLUGIN = """import os

from harness import hookimpl


@hookimpl
def harness_agent_start(run):
    if "crash" in run.conversation.messages[-1].content:
        raise RuntimeError("bad credentials " + os.environ["OPENAI_API_KEY"])
"""

CRASH = "name: crash\ninput: crash now\nllm: {script: [{content: hi}]}\n"

SCENARIO = """\
name: leaky
input: Who am I?
tools:
  whoami: {use: "leaky_tools:whoami"}
  login: {use: "leaky_tools:login"}
llm:
  script:
    - tool_calls: [{whoami: {}}, {login: {}}]
    - content: Logged in.
expect:
  final: {contains: "never said"}
  tool_calls:
    count: {whoami: 5}
"""


def test_results_report_trace_and_failure_text_mask_the_secrets(pytester, monkeypatch):
    for name, value in SECRETS.items():
        monkeypatch.setenv(name, value)
    (pytester.path / "pyproject.toml").write_text(
        "[project]\nname = 'demo'\n[tool.harness]\nplugins = ['crashing']\n"
    )
    (pytester.path / "leaky_tools.py").write_text(LEAKY_TOOLS)
    (pytester.path / "crashing.py").write_text(CRASHING_PLUGIN)
    (pytester.path / "scenarios").mkdir()
    (pytester.path / "scenarios" / "leaky.scenario.yaml").write_text(SCENARIO)
    (pytester.path / "scenarios" / "crash.scenario.yaml").write_text(CRASH)

    result = pytester.run(
        sys.executable, "-m", "harness.cli", "run", "--json", "out/results.json",
        "--html", "out/report.html", "--", "-v", timeout=300,
    )  # fmt: skip

    assert result.ret == 1  # the expectations fail, so the failure text is printed
    stdout = result.stdout.str() + result.stderr.str()
    written = {
        "results.json": (pytester.path / "out/results.json").read_text(),
        "report.html": (pytester.path / "out/report.html").read_text(),
        "output": stdout,
    }
    # The secrets did flow through the run: their masks are where they would have been.
    assert "key=<OPENAI_API_KEY> org=<OPENAI_ORG_ID>" in written["results.json"]
    assert "rejected project <OPENAI_PROJECT_ID>" in written["results.json"]
    assert "key=&lt;OPENAI_API_KEY&gt;" in written["report.html"]
    assert "bad credentials <OPENAI_API_KEY>" in written["results.json"]
    assert "RuntimeError: bad credentials <OPENAI_API_KEY>" in written["output"]
    for where, text in written.items():
        for name, value in SECRETS.items():
            assert value not in text, f"{name}'s value reached {where}"


class QuotesTheKey:
    """A planner plugin with a bug whose exception message quotes the API key."""

    @hookimpl
    def harness_agent_start(self, run):
        import os

        raise RuntimeError(f"bad credentials {os.environ['OPENAI_API_KEY']}")


def test_the_harness_logger_masks_secrets_in_messages_and_tracebacks(monkeypatch, caplog):
    monkeypatch.setenv("OPENAI_API_KEY", SECRETS["OPENAI_API_KEY"])
    agent = Agent(llm=ScriptedLLM([{"content": "hi"}]), plugins=[QuotesTheKey()])
    with caplog.at_level(logging.DEBUG, logger="harness"):
        result = agent.run("hello")
        logging.getLogger("harness").info("echo %s", SECRETS["OPENAI_API_KEY"])
    assert result.termination == "error"
    text = caplog.text
    assert "run ended in error" in text and "bad credentials <OPENAI_API_KEY>" in text
    assert "echo <OPENAI_API_KEY>" in text
    assert SECRETS["OPENAI_API_KEY"] not in text


def test_values_too_short_to_be_secrets_are_left_alone_in_results_and_logs(monkeypatch, caplog):
    # The same rule as in cassettes (harness._secrets.MIN_SECRET_LENGTH): masking "x"
    # would rewrite every "x" of the results and the log.
    from harness._results import ScenarioResult
    from harness._secrets import MIN_SECRET_LENGTH, scrub_model, scrub_text

    monkeypatch.setenv("OPENAI_API_KEY", "x" * (MIN_SECRET_LENGTH - 1))
    monkeypatch.setenv("OPENAI_ORG_ID", "org-" + "y" * (MIN_SECRET_LENGTH - 4))
    agent = Agent(llm=ScriptedLLM([{"content": "xxxxxxx: an index of org-yyyy."}]))
    with caplog.at_level(logging.DEBUG, logger="harness"):
        result = agent.run("hello")
        logging.getLogger("harness").info("said %s", result.final.content)
    flat = ScenarioResult.from_run(
        result, id="a::b", name="b", file="a", expectations=[], status="passed"
    )
    assert scrub_model(flat).final.content == "xxxxxxx: an index of <OPENAI_ORG_ID>."
    assert scrub_text("x-stainless-lang: xxxxxxx") == "x-stainless-lang: xxxxxxx"
    assert "said xxxxxxx: an index of <OPENAI_ORG_ID>." in caplog.text


def test_account_ids_an_api_message_names_are_masked_without_the_environment(tmp_path, monkeypatch):
    # OpenAI's 429 names the organization; nothing in the environment says which it is.
    from harness._results import build_results
    from harness.report._html import write_html
    from harness.scenario import run_scenario

    for name in SECRETS:
        monkeypatch.delenv(name, raising=False)
    org, project = "org-AbCdEfGhIjKlMnOpQrStUvWx", "proj_tzz1TbPPOXaf6j9tEkVUBIAa"
    message = f"Rate limit reached for gpt-4o-mini in organization {org} (project {project})"
    path = tmp_path / "limited.scenario.yaml"
    path.write_text(
        f"input: hi\nllm: {{script: [{{error: {{status: 429, message: '{message}'}}}}]}}\n"
    )
    result = run_scenario(path)
    assert result.termination == "llm_error"
    results = build_results([result]).to_json()
    write_html(tmp_path / "report.html", build_results([result]))
    page = (tmp_path / "report.html").read_text()
    assert "in organization <an org id> (project <a project id>)" in results
    for text in (results, page):
        assert org not in text and project not in text
