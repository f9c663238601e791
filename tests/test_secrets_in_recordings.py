"""Secrets never reach a cassette, a frozen scenario, a report or a printed line, whole or in
pieces, whichever way they travel while recording: echoed in a reply (whole, or streamed with
the key cut between two chunks at every offset), as the password of a base URL, in a
gateway's response headers, through a target's recording proxy, and on through
``harness freeze`` and its messages.

The upstream is harness's own OpenAI-compatible server on 127.0.0.1, wrapped to send the
headers a gateway adds; the clients are the real openai SDK. "In pieces" is checked as any
8 characters in a row of a secret (``PIECE``): a secret's shortest leak that still says
something about it, and longer than anything the secrets below share with other text.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from harness.llm._script import parse_step
from harness.serve import create_app, running_app

KEY = "sk-Canary7Qw3Zp9Xv2Rt8Ym4Kd6Hs1Jb5Nc0Lm2"
ORG = "org-Zx81QmLw0Pe5Rt7Yu3Io9Kj"
PROJECT = "proj_Hg4Fd2Sa6Lk8Jh0Gf1Ds3Ap"
PASSWORD = "pw-Hunter2Zq8Lm3Vx7"
# A gateway's token in a response header: no environment variable holds it, so only the
# header's name can keep it out.
TOKEN = "tok-Uh5Wq9Er2Ty6Io3Pa"
# Another account the API names in a message ("... in organization org-..."): masked as an
# org id, whatever the environment holds.
OTHER_ORG = "org-Aa11Bb22Cc33Dd44Ee55Ff66"
SECRETS = {
    "OPENAI_API_KEY": KEY,
    "OPENAI_ORG_ID": ORG,
    "OPENAI_PROJECT_ID": PROJECT,
    "the URL's password": PASSWORD,
    "the header's token": TOKEN,
    "another org id": OTHER_ORG,
}
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
        if path.is_file():
            pieces = leaks(path.read_bytes().decode("utf-8", "replace"))
            if pieces:
                found[str(path.relative_to(folder))] = pieces
    return found


@pytest.fixture
def project(tmp_path, monkeypatch, fresh_plugins):
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "canary"\n')
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    monkeypatch.setenv("OPENAI_ORG_ID", ORG)
    monkeypatch.setenv("OPENAI_PROJECT_ID", PROJECT)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    return tmp_path


class Gateway:
    """ASGI wrapper adding what a gateway in front of the API sends back: its own token,
    the account's headers, a session cookie and a request id."""

    def __init__(self, app):
        self.app = app

    async def __call__(self, scope, receive, send):
        async def with_headers(message):
            if message["type"] == "http.response.start":
                added = [
                    (b"x-gateway-token", TOKEN.encode()),
                    (b"openai-organization", ORG.encode()),
                    (b"openai-project", PROJECT.encode()),
                    (b"set-cookie", f"session={TOKEN}; HttpOnly".encode()),
                    (b"x-request-id", b"req_canary_1"),
                ]
                message = {**message, "headers": [*message.get("headers", []), *added]}
            await send(message)

        await self.app(scope, receive, with_headers)


def upstream(steps):
    """The gateway and the model behind it, on 127.0.0.1; the base URL carries a password."""
    app = Gateway(create_app([parse_step(i, s) for i, s in enumerate(steps)]))
    return running_app(app)


def with_password(url: str) -> str:
    return url.replace("http://", f"http://alice:{PASSWORD}@", 1)


# -- replies that cut secrets between chunks ------------------------------------------------------


def cut_everywhere(*secrets: str) -> list[str]:
    """Text pieces holding, per secret, one copy cut between two pieces at each offset."""
    pieces = []
    for secret in secrets:
        for k in range(1, len(secret)):
            pieces += [secret[:k], f"{secret[k:]} "]
    return pieces


def streamed_step(texts: list[str], token_cut: int) -> dict:
    """A reply streamed in exactly these text pieces, then a call to ``login`` whose
    arguments carry the key, cut ``token_cut`` characters into it."""
    arguments = json.dumps({"token": KEY})
    at = arguments.index(KEY) + token_cut
    chunks = [{"content": text} for text in texts]
    chunks.append({"tool_calls": [{"index": 0, "id": "call_login", "name": "login"}]})
    chunks += [
        {"tool_calls": [{"index": 0, "arguments": part}]}
        for part in (arguments[:at], arguments[at:])
    ]
    chunks.append({"finish_reason": "tool_calls"})
    call = {"id": "call_login", "name": "login", "arguments": {"token": KEY}}
    return {"content": "".join(texts), "tool_calls": [call], "chunks": chunks}


def padded_logins() -> list[dict]:
    """Calls whose arguments put the key at 8 different offsets: streamed in the 8-character
    pieces servers cut arguments into, the key is cut at every offset by one of them."""
    return [
        {"id": f"call_{pad}", "name": "login", "arguments": {"token": "x" * pad + KEY}}
        for pad in range(8)
    ]


LOGIN_TOOL = """\
tools:
  login:
    parameters: {token: str}
    returns: "logged in with {{ args.token }}"
"""


def scenario(folder: Path, name: str, llm: str, tools: bool = True) -> Path:
    path = folder / "scenarios" / f"{name}.scenario.yaml"
    path.parent.mkdir(parents=True, exist_ok=True)
    text = f"name: {name}\ninput: Log in with my key.\n"
    text += (LOGIN_TOOL if tools else "") + f"llm: {llm}\n"
    path.write_text(text)
    return path


# -- each leak alone -------------------------------------------------------------------------------


@pytest.mark.parametrize("api", ["chat", "responses"])
def test_a_key_cut_between_two_chunks_at_any_offset_is_masked_and_the_stream_replays(
    project, monkeypatch, api
):
    from harness.scenario import run_scenario

    if api == "chat":
        first = streamed_step(cut_everywhere(KEY, ORG, PROJECT), token_cut=13)
    else:  # the server streams text by words, and arguments in pieces of 8 characters
        first = {"content": f"Logging in as {KEY}.", "tool_calls": padded_logins()}
    steps = [first, {"content": "Done."}]
    llm = f"{{provider: openai, model: gpt-4o-mini, api: {api}, stream: true}}"
    path = scenario(project, api, llm)
    with upstream(steps) as url:
        monkeypatch.setenv("OPENAI_BASE_URL", url)
        recorded = run_scenario(path, record_mode="once")
    monkeypatch.delenv("OPENAI_BASE_URL")
    assert recorded.status == "passed", recorded.final

    cassette = project / "cassettes" / f"{api}.yaml"
    text = cassette.read_text()
    assert leaks(text) == []
    assert "<OPENAI_API_KEY>" in text
    # The stream is still a stream: with the key set, the replay puts it back and the run
    # is the recorded one.
    replayed = run_scenario(path)
    assert replayed.status == "passed", replayed.final
    keep = {"wall_time", "wall_clock", "expectations", "file", "id"}
    assert replayed.model_dump(exclude=keep) == recorded.model_dump(exclude=keep)
    assert [c.arguments["token"][-len(KEY) :] for c in replayed.tool_calls] == [KEY] * len(
        replayed.tool_calls
    )


def chat_stream(pieces: list[str], call: tuple[str, str, str] | None = None) -> str:
    """A Chat Completions stream as the API sends it (compact JSON): text in ``pieces``,
    then a call ``(id, name, arguments)`` when given."""
    base = {"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1, "model": "m"}
    deltas = [{"role": "assistant", "content": pieces[0]}, *({"content": p} for p in pieces[1:])]
    if call is not None:
        opening = {"index": 0, "id": call[0], "type": "function"}
        deltas.append({"tool_calls": [{**opening, "function": {"name": call[1], "arguments": ""}}]})
        deltas.append({"tool_calls": [{"index": 0, "function": {"arguments": call[2]}}]})
    events = [
        {**base, "choices": [{"index": 0, "delta": d, "finish_reason": None}]} for d in deltas
    ]
    finish = "tool_calls" if call is not None else "stop"
    events.append({**base, "choices": [{"index": 0, "delta": {}, "finish_reason": finish}]})
    lines = [f"data: {json.dumps(e, separators=(',', ':'))}\n\n" for e in events]
    return "".join(lines) + "data: [DONE]\n\n"


def interaction(messages: list[dict], answer: str) -> dict:
    """One recorded Chat Completions request and its streamed answer, in a cassette."""
    return {
        "request": {
            "method": "POST",
            "uri": "https://api.openai.com/v1/chat/completions",
            "headers": {"content-type": ["application/json"]},
            "parsed_body": {"model": "m", "messages": messages, "stream": True},
        },
        "response": {
            "status": {"code": 200, "message": "OK"},
            "headers": {"content-type": ["text/event-stream"]},
            "body": {"string": answer},
        },
    }


def write_cassette(path: Path, interactions: list[dict]) -> Path:
    path.write_text(yaml.safe_dump({"version": 1, "interactions": interactions}))
    return path


def freeze(folder: Path, cassette: Path, capfd) -> tuple[int, str, str]:
    """``harness freeze CASSETTE -o frozen.scenario.yaml``: exit status, printed text, the
    file written ("" when none)."""
    from harness.cli import main

    out = folder / "frozen.scenario.yaml"
    code = main(["freeze", str(cassette), "-o", str(out)])
    printed = capfd.readouterr()
    return code, printed.out + printed.err, out.read_text() if out.exists() else ""


def test_freeze_masks_a_key_an_older_recording_holds_in_pieces(project, capfd):
    # Recorded before streams were masked whole (or by another tool): the key is cut in two,
    # so neither piece is the key, and freeze joins them into the reply's text.
    pieces = ["Your key is ", KEY[:13], f"{KEY[13:]}, not ", OTHER_ORG[:9], f"{OTHER_ORG[9:]}'s."]
    question = [{"role": "user", "content": "What is my key?"}]
    cassette = write_cassette(project / "old.yaml", [interaction(question, chat_stream(pieces))])

    code, printed, frozen = freeze(project, cassette, capfd)

    assert code == 0, printed
    assert leaks(frozen) == [] and leaks(printed) == []
    assert yaml.safe_load(frozen)["llm"]["script"] == [
        {"content": "Your key is <OPENAI_API_KEY>, not <an org id>'s."}
    ]


def test_freeze_messages_mask_a_secret_before_shortening_it(project, capfd):
    # The frozen run sends back the reply the stream holds; the recording's client sent
    # back another text, so freeze refuses and quotes both, shortened.
    said = chat_stream(
        [KEY[:20], f"{KEY[20:]} is your key, keep it safe."], ("call_1", "login", "{}")
    )
    question = [{"role": "user", "content": "What is my key?"}]
    call = {"id": "call_1", "type": "function", "function": {"name": "login", "arguments": "{}"}}
    sent_back = [
        *question,
        {"role": "assistant", "content": "I cannot say.", "tool_calls": [call]},
        {"role": "tool", "tool_call_id": "call_1", "content": "ok"},
    ]
    cassette = write_cassette(
        project / "edited.yaml",
        [interaction(question, said), interaction(sent_back, chat_stream(["Done."]))],
    )

    code, printed, frozen = freeze(project, cassette, capfd)

    assert code == 2 and frozen == ""
    # Unmasked, the text was too long and kept its first 28 characters: 28 of the key's 40.
    assert "is assistant message '<OPENAI_API_KEY> is your key, keep it safe.'" in printed
    assert leaks(printed) == []


def test_a_damaged_cassette_holding_the_key_is_reported_without_it(project, capfd):
    # An error about a value quotes it, shortened: masked first, or a prefix of the key shows.
    cassette = project / "damaged.yaml"
    cassette.write_text(
        "interactions:\n"
        "- request:\n"
        "    method: POST\n"
        "    uri: https://api.openai.com/v1/chat/completions\n"
        f"    headers: {{authorization: {{Bearer: {KEY}}}}}\n"
        "  response: {status: {code: 200}}\n"
    )

    code, printed, _ = freeze(project, cassette, capfd)

    assert code == 2
    assert "request.headers.authorization: expected a string or a list of strings" in printed
    assert "<OPENAI_API_KEY>" in printed
    assert leaks(printed) == []


def test_a_password_in_the_base_url_reaches_neither_the_cassette_nor_an_error(project):
    from harness._results import build_results
    from harness.scenario import run_scenario

    llm = "{provider: openai, model: gpt-4o-mini, base_url: %s}"
    with upstream([{"content": "Hello."}]) as url:
        recorded = run_scenario(scenario(project, "hello", llm % with_password(url), False), "once")
    assert recorded.status == "passed", recorded.final
    (uri,) = [i["request"]["uri"] for i in yaml.safe_load(
        (project / "cassettes" / "hello.yaml").read_text())["interactions"]]  # fmt: skip
    assert uri.startswith("http://<credentials>@127.0.0.1:") and uri.endswith("/chat/completions")

    # Nothing listens on port 9: the error names the URL it tried, without the password.
    closed = with_password("http://127.0.0.1:9/v1")
    failed = run_scenario(scenario(project, "closed", llm % closed, False), "once")
    assert failed.termination == "llm_error"
    message = failed.final.error["message"]
    assert "(tried http://<credentials>@127.0.0.1:9/v1/chat/completions)" in message
    assert leaks(message) == [] and leaks(build_results([recorded, failed]).to_json()) == []


def test_a_cassette_keeps_only_the_headers_that_describe_the_exchange(project, monkeypatch):
    from harness.scenario import run_scenario

    with upstream([{"content": "Hello."}]) as url:
        monkeypatch.setenv("OPENAI_BASE_URL", url)
        llm = "{provider: openai, model: gpt-4o-mini}"
        recorded = run_scenario(scenario(project, "hello", llm, False), "once")
    assert recorded.status == "passed", recorded.final
    text = (project / "cassettes" / "hello.yaml").read_text()
    (recording,) = yaml.safe_load(text)["interactions"]
    # The gateway's token, the account, the cookie, the server's own headers: all gone.
    assert set(recording["response"]["headers"]) == {"content-type", "x-request-id"}
    request_headers = set(recording["request"]["headers"])
    assert {"content-type", "accept", "user-agent", "x-stainless-lang"} <= request_headers
    assert not request_headers & {"authorization", "openai-organization", "host", "cookie"}
    assert leaks(text) == []


@pytest.mark.parametrize("header", ["X-Portkey-Api-Key", "Helicone-Auth", "x-goog-api-key"])
def test_a_credential_in_a_request_header_harness_does_not_know_is_dropped(header):
    # A proxy's or another provider's key: no variable holds it and no list names it.
    from harness.cassettes._format import dump_cassette

    recording = interaction([{"role": "user", "content": "hi"}], chat_stream(["Hello."]))
    recording["request"]["headers"][header] = [f"Bearer {TOKEN}"]
    recording["request"]["body"] = json.dumps(recording["request"].pop("parsed_body"))
    recording["response"]["body"]["string"] = recording["response"]["body"]["string"].encode()
    text = dump_cassette({"version": 1, "interactions": [recording]})
    assert leaks(text) == []
    (kept,) = yaml.safe_load(text)["interactions"]
    assert set(kept["request"]["headers"]) == {"content-type"}


# -- every path at once ----------------------------------------------------------------------------

TARGET_AGENT = """\
import openai


def answer(question: str) -> str:
    client = openai.OpenAI(max_retries=0)
    stream = client.chat.completions.create(
        model="gpt-4o-mini", messages=[{"role": "user", "content": question}], stream=True
    )
    return "".join(chunk.choices[0].delta.content or "" for chunk in stream if chunk.choices)
"""

TARGET = """\
name: target
target: {python: "canary_agent:answer", timeout: 30}
input: Log in with my key.
llm: {provider: openai, model: gpt-4o-mini}
"""


def recordings() -> dict[str, tuple[str, list[dict]]]:
    """name -> (llm section, the upstream's script) of each recorded scenario of harness's
    own loop: the key whole, cut at every offset in a Chat Completions stream, cut at every
    offset in a Responses stream's arguments."""
    said = f"Your key is {KEY} ({ORG}, {PROJECT}), not {OTHER_ORG}'s."
    done = {"content": "Done."}
    llm = "{provider: openai, model: gpt-4o-mini, api: %s, stream: %s}"
    every_offset = cut_everywhere(KEY, ORG, PROJECT, OTHER_ORG)
    return {
        "plain": (
            llm % ("chat", "false"),
            [{"content": said, "tool_calls": [{"login": {"token": KEY}}]}, done],
        ),
        "chat-stream": (llm % ("chat", "true"), [streamed_step(every_offset, 20), done]),
        "responses-stream": (
            llm % ("responses", "true"),
            [{"content": said, "tool_calls": padded_logins()}, done],
        ),
    }


def test_no_piece_of_a_secret_reaches_a_file_or_a_printed_line_on_any_path(
    project, monkeypatch, capfd
):
    from harness.cli import main

    codes = {}
    for name, (llm, steps) in recordings().items():
        path = scenario(project, name, llm)
        with upstream(steps) as url:
            monkeypatch.setenv("OPENAI_BASE_URL", with_password(url))
            codes[name] = main(["record", str(path), "--json", f"out/{name}.json",
                                "--html", f"out/{name}.html"])  # fmt: skip
    # A target's client, recorded through the proxy.
    (project / "canary_agent.py").write_text(TARGET_AGENT)
    target = project / "scenarios" / "target.scenario.yaml"
    target.write_text(TARGET)
    content = cut_everywhere(KEY, ORG, PROJECT, OTHER_ORG)
    streamed = {"content": "".join(content), "chunks": [{"content": c} for c in content]}
    with upstream([streamed]) as url:
        monkeypatch.setenv("OPENAI_BASE_URL", with_password(url))
        codes["target"] = main(["record", str(target), "--json", "out/target.json"])
    # An endpoint that does not answer: the error names the URL it tried.
    monkeypatch.setenv("OPENAI_BASE_URL", with_password("http://127.0.0.1:9/v1"))
    closed = scenario(project, "closed", "{provider: openai, model: gpt-4o-mini}", False)
    codes["closed"] = main(["record", str(closed), "--json", "out/closed.json"])
    monkeypatch.delenv("OPENAI_BASE_URL")

    # Each recording frozen into a scenario, and the frozen scenarios run.
    (project / "frozen").mkdir()
    for name in recordings():
        codes[f"freeze {name}"] = main(
            ["freeze", f"cassettes/{name}.yaml", "-o", f"frozen/{name}.scenario.yaml"]
        )
    codes["freeze target"] = main(
        ["freeze", "--scenario", str(target), "-o", "frozen/target.scenario.yaml"]
    )
    codes["run frozen"] = main(["run", "frozen", "--json", "out/frozen.json",
                                "--html", "out/frozen.html"])  # fmt: skip
    printed = capfd.readouterr()

    assert codes == {**dict.fromkeys(codes, 0), "closed": 1}, printed.out + printed.err
    assert (
        "(tried http://<credentials>@127.0.0.1:9/v1/chat/completions)"
        in (project / "out" / "closed.json").read_text()
    )
    frozen = yaml.safe_load((project / "frozen" / "chat-stream.scenario.yaml").read_text())
    assert frozen["llm"]["script"][0]["content"].startswith("<OPENAI_API_KEY> ")
    assert files_leaking(project) == {}
    assert leaks(printed.out) == [] and leaks(printed.err) == []


def _all_text(value) -> str:
    """Every string and byte string a loaded cassette holds, joined (bytes as Latin-1:
    each byte one character, whatever the body's encoding)."""
    if isinstance(value, dict):
        return "\n".join(_all_text(k) + "\n" + _all_text(v) for k, v in value.items())
    if isinstance(value, list):
        return "\n".join(_all_text(v) for v in value)
    if isinstance(value, bytes):
        return value.decode("latin-1")
    return value if isinstance(value, str) else ""


def test_a_body_that_is_not_utf8_holding_the_key_is_masked(project):
    # A gateway that answers in Latin-1 and quotes the key: the body is no UTF-8 text, so
    # the cassette keeps it as bytes (base64 in the file, where no text search finds it).
    from harness._asgi import serving_in_thread
    from harness.scenario import run_scenario

    said = f"Schl\u00fcssel ung\u00fcltig: {KEY}".encode("latin-1")

    async def gateway(scope, receive, send):
        if scope["type"] != "http":
            return
        while (await receive()).get("more_body"):
            pass
        headers = [(b"content-type", b"text/plain; charset=latin-1")]
        await send({"type": "http.response.start", "status": 500, "headers": headers})
        await send({"type": "http.response.body", "body": said})

    llm = "{provider: openai, model: gpt-4o-mini, base_url: %s}"
    with serving_in_thread(gateway) as url:
        run_scenario(scenario(project, "latin", llm % f"{url}/v1", False), "once")
    written = (project / "cassettes" / "latin.yaml").read_text()
    stored = _all_text(yaml.safe_load(written))
    assert "ung\u00fcltig: <OPENAI_API_KEY>" in stored  # recorded, masked
    assert leaks(stored) == [] and leaks(written) == []
