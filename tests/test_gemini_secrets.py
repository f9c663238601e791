"""No piece of a Gemini key reaches a file or a printed line, whichever way it travels while
recording (docs/recording.md#gemini): ``GEMINI_API_KEY`` and ``GOOGLE_API_KEY`` echoed by
the model (whole, and streamed with the key cut between two chunks at every offset), sent
by google-genai as ``x-goog-api-key``, and a target's own key sent in the URL as ``?key=``
and in ``x-goog-api-key``, through the recording proxy; then on through ``harness freeze``,
the frozen scenarios' run and their reports.

The upstream is harness serve on 127.0.0.1 answering the Gemini API; the clients are the
real google-genai SDK and httpx. "In pieces" is any 8 characters in a row of a secret.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from harness.llm._script import parse_step
from harness.serve import create_app, running_app

pytest.importorskip("google.genai")

GEMINI_KEY = "AIzaGemCanary7Qw3Zp9Xv2Rt8Ym4Kd6Hs1Jb5"
GOOGLE_KEY = "AIzaGooCanary4Lk8Jh0Gf1Ds3Ap6Hg2Fd9Sa0"
# A target's own key, held by no variable harness reads: only the URL's ?key= rule and the
# header's name can keep it out.
OWN_KEY = "AIzaOwnCanary3Mn5Bv8Cx1Zl6Kj9Hg4Fd2Qw7"
SECRETS = {"GEMINI_API_KEY": GEMINI_KEY, "GOOGLE_API_KEY": GOOGLE_KEY, "the target's": OWN_KEY}
PIECE = 8


def leaks(text: str) -> list[str]:
    """Each piece of ``PIECE`` characters of a secret that ``text`` holds, named."""
    return [
        f"{name}: {secret[i : i + PIECE]!r}"
        for name, secret in SECRETS.items()
        for i in range(len(secret) - PIECE + 1)
        if secret[i : i + PIECE] in text
    ]


def files_leaking(folder: Path) -> dict[str, list[str]]:
    """Every file under ``folder`` that holds a piece of a secret, with the pieces."""
    found = {}
    for path in sorted(folder.rglob("*")):
        if path.is_file() and "__pycache__" not in path.parts and path.name != "own_key.py":
            pieces = leaks(path.read_bytes().decode("utf-8", "replace"))
            if pieces:
                found[str(path.relative_to(folder))] = pieces
    return found


def cut_everywhere(*secrets: str) -> list[str]:
    """Text pieces holding, per secret, one copy cut between two pieces at each offset."""
    pieces = []
    for secret in secrets:
        for k in range(1, len(secret)):
            pieces += [secret[:k], f"{secret[k:]} "]
    return pieces


def upstream(steps):
    return running_app(create_app([parse_step(i, s) for i, s in enumerate(steps)]))


@pytest.fixture
def project(tmp_path, monkeypatch, fresh_plugins):
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "canary"\n')
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setenv("GEMINI_API_KEY", GEMINI_KEY)
    monkeypatch.setenv("GOOGLE_API_KEY", GOOGLE_KEY)
    monkeypatch.delenv("GOOGLE_GEMINI_BASE_URL", raising=False)
    (tmp_path / "scenarios").mkdir()
    (tmp_path / "own_key.py").write_text(f"KEY = {OWN_KEY!r}\n")
    return tmp_path


def own_loop(folder: Path, name: str, stream: bool, base_url: str) -> Path:
    path = folder / "scenarios" / f"{name}.scenario.yaml"
    path.write_text(
        f"name: {name}\ninput: Log in with my key.\n"
        "tools:\n  login:\n    parameters: {token: str}\n"
        '    returns: "logged in with {{ args.token }}"\n'
        f"llm: {{provider: gemini, model: gemini-2.5-flash, stream: {str(stream).lower()}, "
        f"base_url: '{base_url}'}}\n"
    )
    return path


# A target on raw HTTP that sends its own key the two ways the Gemini API takes it.
TARGET_AGENT = """\
import json
import os

import httpx

from own_key import KEY


def answer(question: str) -> str:
    base = os.environ["GOOGLE_GEMINI_BASE_URL"].rstrip("/")
    url = f"{base}/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse&key={KEY}"
    body = {"contents": [{"role": "user", "parts": [{"text": question}]}]}
    reply = httpx.post(url, json=body, headers={"x-goog-api-key": KEY}, timeout=30)
    reply.raise_for_status()
    texts = []
    for line in reply.text.splitlines():
        if line.startswith("data:"):
            for part in json.loads(line[5:])["candidates"][0]["content"]["parts"]:
                texts.append(part.get("text", ""))
    return "".join(texts)
"""


def test_no_piece_of_a_gemini_key_reaches_a_file_or_a_printed_line(project, monkeypatch, capfd):
    from harness.cli import main

    said = f"Your keys are {GEMINI_KEY} and {GOOGLE_KEY}."
    every_offset = cut_everywhere(GEMINI_KEY, GOOGLE_KEY)
    login = {"id": "call_login", "name": "login", "arguments": {"token": GOOGLE_KEY}}
    chunks = [{"content": c} for c in every_offset]
    chunks.append(
        {"tool_calls": [{"index": 0, **login, "arguments": f'{{"token": "{GOOGLE_KEY}"}}'}]}
    )
    streamed = {"content": "".join(every_offset), "chunks": chunks, "tool_calls": [login]}
    steps = {
        "plain": (False, [{"content": said, "tool_calls": [{"login": {"token": GEMINI_KEY}}]}]),
        "stream": (True, [streamed]),
    }
    codes = {}
    for name, (stream, script) in steps.items():
        with upstream([*script, {"content": "Done."}]) as url:
            path = own_loop(project, name, stream, url.removesuffix("/v1"))
            codes[name] = main(["record", str(path), "--json", f"out/{name}.json",
                                "--html", f"out/{name}.html"])  # fmt: skip
    (project / "gemini_canary_agent.py").write_text(TARGET_AGENT)
    target = project / "scenarios" / "target.scenario.yaml"
    target.write_text(
        "name: target\ntarget: {python: 'gemini_canary_agent:answer', timeout: 30}\n"
        "input: Log in with my key.\nllm: {provider: gemini}\n"
    )
    content = cut_everywhere(GEMINI_KEY, GOOGLE_KEY)
    with upstream(
        [{"content": "".join(content), "chunks": [{"content": c} for c in content]}]
    ) as url:
        monkeypatch.setenv("GOOGLE_GEMINI_BASE_URL", url.removesuffix("/v1"))
        codes["target"] = main(["record", str(target), "--json", "out/target.json"])
    monkeypatch.delenv("GOOGLE_GEMINI_BASE_URL")

    (project / "frozen").mkdir()
    for name in [*steps, "target"]:
        given = f"scenarios/{name}.scenario.yaml"
        out = f"frozen/{name}.scenario.yaml"
        codes[f"freeze {name}"] = main(["freeze", "--scenario", given, "-o", out])
    codes["run frozen"] = main(["run", "frozen", "--json", "out/frozen.json",
                                "--html", "out/frozen.html"])  # fmt: skip
    printed = capfd.readouterr()

    assert codes == dict.fromkeys(codes, 0), printed.out + printed.err
    cassette = yaml.safe_load((project / "cassettes" / "target.yaml").read_text())
    (request,) = [i["request"] for i in cassette["interactions"]]
    assert request["uri"].endswith("?alt=sse&key=<credentials>")
    assert "x-goog-api-key" not in {h.lower() for h in request["headers"]}
    frozen = yaml.safe_load((project / "frozen" / "stream.scenario.yaml").read_text())
    assert frozen["llm"]["script"][0]["content"].startswith("<GEMINI_API_KEY> ")
    assert files_leaking(project) == {}
    assert leaks(printed.out) == [] and leaks(printed.err) == []
