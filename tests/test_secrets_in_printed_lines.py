"""Secrets out of every line harness or pytest prints: when a user turns debug logs on
(`harness run ... -- --log-cli-level=DEBUG`, `--log-file`) the anthropic SDK's and
vcrpy's loggers print requests and answers, keys among them; `harness validate` said what
was wrong with a file named as `history:` by quoting it (a credentials file showed its
key)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from harness.serve import running_server

pytest.importorskip("anthropic", reason="provider anthropic needs the anthropic SDK")

# A key shaped like Anthropic's.
SECRET = "sk-ant-api03-" + "Qw8" * 30

SCENARIO = """\
input: What is the key?
tools:
  note:
    parameters: {{text: str}}
    returns: kept
llm:
  provider: anthropic
  model: claude-sonnet-4-6
  base_url: {url}
"""


WAYS = {
    # What the user asks of pytest, and where the lines go.
    "live log": (["--log-cli-level=DEBUG"], "out"),
    "log file": (["--log-file=run.log", "--log-file-level=DEBUG"], "file"),
    # A failing scenario's report shows the lines its run logged.
    "captured log of a failure": (["--log-level=DEBUG"], "out"),
}


@pytest.mark.parametrize("way", list(WAYS))
def test_debug_logs_of_the_sdk_and_vcrpy_show_no_key(tmp_path, way):
    # A model that says the key back (a gateway's error quoting it, a prompt holding it):
    # vcrpy logs each answer it records, the SDK each request (the history holds it).
    options, where = WAYS[way]
    steps = [
        {"content": f"The key is {SECRET}.", "tool_calls": [{"note": {"text": SECRET}}]},
        {"content": "Noted."},
    ]
    with running_server(steps) as url:
        path = tmp_path / "key.scenario.yaml"
        text = SCENARIO.format(url=url.removesuffix("/v1"))
        if way.startswith("captured"):
            text += "expect:\n  final:\n    contains: never said\n"
        path.write_text(text)
        (tmp_path / "pyproject.toml").write_text('[project]\nname = "t"\n')
        done = subprocess.run(
            [
                sys.executable,
                "-m",
                "harness.cli",
                "run",
                str(path),
                "--record-mode",
                "once",
                "--",
                *options,
            ],
            capture_output=True,
            text=True,
            timeout=120,
            cwd=tmp_path,
            env={**os.environ, "ANTHROPIC_API_KEY": SECRET},
        )
    said = done.stdout + done.stderr
    if where == "file":
        said = (tmp_path / "run.log").read_text()
    assert done.returncode == (1 if way.startswith("captured") else 0), said
    # The lines were printed (masked), not left out.
    assert "vcr.cassette" in said and "anthropic._base_client" in said, said
    assert "<ANTHROPIC_API_KEY>" in said
    assert SECRET not in said and SECRET[-24:] not in said and SECRET[:24] not in said


def test_a_captured_log_record_with_nothing_to_mask_keeps_its_arguments(caplog):
    # Masking rewrites a record only when it holds a secret: a test reading a record's
    # arguments reads them as logged.
    import logging

    with caplog.at_level(logging.INFO, logger="some.library"):
        logging.getLogger("some.library").info("took %d ms", 12)
    (record,) = caplog.records
    assert record.args == (12,) and record.getMessage() == "took 12 ms"


def test_a_hand_written_tests_captured_log_text_is_masked(caplog, monkeypatch):
    # caplog.text is written as each record comes: masked by then, or never.
    import logging

    monkeypatch.setenv("ANTHROPIC_API_KEY", SECRET)
    with caplog.at_level(logging.DEBUG, logger="anthropic._base_client"):
        logging.getLogger("anthropic._base_client").debug("Request options: %s", {"key": SECRET})
    assert SECRET not in caplog.text and "<ANTHROPIC_API_KEY>" in caplog.text


CREDENTIALS = "sk-proj-" + "Hv5" * 20


@pytest.mark.parametrize(
    ("content", "said"),
    [
        ({"api_key": CREDENTIALS}, "api_key: Extra inputs are not permitted"),
        ({"messages": CREDENTIALS}, "messages: Input should be a valid list"),
        (
            {"messages": [{"role": CREDENTIALS, "content": "x"}]},
            "messages.0: its 'role' is none of",
        ),
        ([CREDENTIALS], "item 0: a JSON str, not a message"),
        ([{"role": CREDENTIALS, "content": "x"}], "item 0: "),
        ([{"role": "assistant", "tool_calls": CREDENTIALS}], "item 0: not an OpenAI message"),
    ],
    ids=["key", "messages", "role", "a string", "a role in a list", "calls in a list"],
)
def test_validate_never_shows_what_a_history_file_holds(tmp_path, content, said):
    # A credentials file named as history: by mistake, and no key in the environment.
    import json

    (tmp_path / "creds.json").write_text(json.dumps(content))
    (tmp_path / "a.scenario.yaml").write_text(
        "input: hi\nhistory: creds.json\nllm:\n  script:\n    - content: ok\n"
    )
    done = subprocess.run(
        [sys.executable, "-m", "harness.cli", "validate", "a.scenario.yaml"],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=tmp_path,
    )
    shown = done.stdout + done.stderr
    assert done.returncode == 2, shown
    assert "creds.json is neither a saved Conversation nor a list of OpenAI messages" in shown
    assert said in shown, shown
    assert CREDENTIALS not in shown and CREDENTIALS[:14] not in shown and "Hv5Hv5" not in shown
