"""`harness serve` and `harness serve --cassette` under attack, over real HTTP on
127.0.0.1 (docs/wires.md#limits): every request is bounded where it arrives (its size
before it is read whole, its JSON's depth, its text Unicode), refused in the form of its
wire and never with a traceback; the bodies held at once, the conversations kept and the
clients that stop reading their answer are bounded too; a Gemini key sent as ``?key=``
never reaches the access log; a script's ``repeat`` is bounded when it is loaded."""

from __future__ import annotations

import contextlib
import json
import logging
import os
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import httpx
import pytest

from harness._asgi import ServerLimits, serving_in_thread
from harness.llm._script import parse_step
from harness.serve import create_app, running_app
from harness.serve._bounds import BodyLimits, BoundedApp

pytestmark = pytest.mark.timeout(180)

FIXTURES = Path(__file__).parent / "fixtures" / "foreign-cassettes"
# A Gemini key's shape: what the access log must never show.
SECRET = "AIzaSy" + "Kq9" * 11
SCENARIO = """\
input: hello
llm:
  script:
    - content: Hello from the script.
      repeat: 50
"""

CHAT = "/v1/chat/completions"
RESPONSES = "/v1/responses"
MESSAGES = "/v1/messages"
COUNT = "/v1/messages/count_tokens"
GEMINI = "/v1beta/models/gemini-3-pro-preview:generateContent"
GEMINI_STREAM = "/v1beta/models/gemini-3-pro-preview:streamGenerateContent?alt=sse"
PATHS = (CHAT, RESPONSES, MESSAGES, COUNT, GEMINI, GEMINI_STREAM)


def _error_form(path: str, status: int, answer: dict) -> str:
    """The message of an error answer, checked to be in the form of ``path``'s wire."""
    if path.startswith("/v1/messages"):
        assert answer["type"] == "error", answer
        assert isinstance(answer["error"]["type"], str), answer
        return answer["error"]["message"]
    if "/models/" in path:
        assert answer["error"]["code"] == status, answer
        assert isinstance(answer["error"]["status"], str), answer
        return answer["error"]["message"]
    assert isinstance(answer["error"]["type"], str), answer
    return answer["error"]["message"]


# -- the command, as a target reaches it ----------------------------------------------------


class Served:
    """`harness serve` in a process of its own, its output kept."""

    def __init__(self, args: list[str], cwd: Path) -> None:
        code = "import sys; from harness.cli import main; sys.exit(main(['serve', *sys.argv[1:]]))"
        env = {**os.environ, "GEMINI_API_KEY": SECRET}
        self.process = subprocess.Popen(
            [sys.executable, "-c", code, *args, "--port", "0"],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            cwd=cwd,
            env=env,
        )
        line = self.process.stdout.readline()
        if "http://" not in line:
            self.process.kill()
            raise AssertionError(f"no URL printed: {line!r} {self.process.stderr.read()}")
        self.url = line.split(" at ", 1)[1].split()[0].removesuffix("/v1")
        self.first = line

    def stop(self) -> str:
        """Stop it; everything it printed."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
        out, err = self.process.communicate(timeout=30)
        return self.first + out + err

    def peak_kib(self) -> int:
        """The most memory the process has held (VmHWM)."""
        status = Path(f"/proc/{self.process.pid}/status").read_text()
        return int(next(li for li in status.splitlines() if li.startswith("VmHWM")).split()[1])


@pytest.fixture(params=["serve", "serve --cassette"])
def served(request, tmp_path):
    if request.param == "serve":
        (tmp_path / "hello.scenario.yaml").write_text(SCENARIO)
        args = ["hello.scenario.yaml"]
    else:
        cassette = "pydantic-ai-test_anthropic_multiple_parallel_tool_calls.yaml"
        shutil.copy(FIXTURES / cassette, tmp_path / "recorded.yaml")
        args = ["--cassette", "recorded.yaml"]
    server = Served(args, tmp_path)
    yield server
    server.stop()


DEEP = "[" * 1000 + "]" * 1000
# A JavaScript agent that cut a string in the middle of an emoji sends its first half.
CUT_EMOJI = '"Sunny \\ud83c"'


def _hostile(path: str, attack: str) -> bytes:
    value = DEEP if attack == "deep" else CUT_EMOJI
    if path in (CHAT, MESSAGES, COUNT):
        text = f'{{"model": "m", "max_tokens": 9, "messages": [{{"role": "user", "content": {value}}}]}}'
    elif path == RESPONSES:
        text = f'{{"model": "m", "input": {value}}}'
    else:
        text = f'{{"contents": [{{"role": "user", "parts": [{{"text": {value}}}]}}]}}'
    return text.encode()


def test_deep_json_and_lone_surrogates_get_a_400_in_the_wires_form(served):
    answers = {}
    for path in PATHS:
        for attack in ("deep", "surrogate"):
            answer = httpx.post(
                served.url + path,
                content=_hostile(path, attack),
                headers={"content-type": "application/json"},
                timeout=60,
            )
            answers[path, attack] = (answer.status_code, answer.json())
    said = served.stop()
    for (path, attack), (status, answer) in answers.items():
        assert status == 400, (path, attack, status, answer)
        message = _error_form(path, status, answer)
        if attack == "deep":
            assert "nested deeper than 100 levels" in message, message
        else:
            assert "lone UTF-16 surrogate (\\ud83c" in message, message
    assert "Traceback" not in said and "Exception in ASGI application" not in said, said


def _post_streamed(url: str, path: str, size: int) -> tuple[int, bytes]:
    """POST a JSON body of ``size`` bytes the way a client sends a large one (its length
    declared, sent in pieces), reading the answer as it comes; (bytes sent, answer)."""
    host, port = url.removeprefix("http://").split(":")
    sock = socket.create_connection((host, int(port)), timeout=60)
    head = (
        f"POST {path} HTTP/1.1\r\nhost: {host}\r\ncontent-type: application/json\r\n"
        f"content-length: {size}\r\n\r\n"
    ).encode()
    opening = b'{"model": "m", "max_tokens": 9, "messages": [{"role": "user", "content": "'
    closing = b'"}]}'
    sent = 0
    answer = bytearray()
    done = threading.Event()

    def read() -> None:
        try:
            while chunk := sock.recv(65536):
                answer.extend(chunk)
        except OSError:
            pass
        done.set()

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    try:
        sock.sendall(head + opening)
        piece = b"a" * (1 << 20)
        left = size - len(opening) - len(closing)
        while left > 0 and not answer:
            sent += sock.send(piece[: min(left, len(piece))])
            left = size - len(opening) - len(closing) - sent
        if left <= 0:
            sock.sendall(closing)
    except OSError:
        pass  # the server closed the connection: the answer was sent before
    done.wait(60)
    sock.close()
    return sent, bytes(answer)


def test_a_150_mb_body_is_refused_before_it_is_read_whole(served):
    httpx.post(served.url + MESSAGES, json={"model": "m", "max_tokens": 9, "messages": []})
    before = served.peak_kib()
    _, answer = _post_streamed(served.url, MESSAGES, 150 * 2**20)
    grown = (served.peak_kib() - before) // 1024
    head, _, body = answer.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 413 "), answer[:300]
    message = _error_form(MESSAGES, 413, json.loads(body))
    assert "this server takes at most 33554432" in message
    # Before: 92 -> 687 MB. A body declared past the limit is not kept at all.
    assert grown < 16, f"the server grew by {grown} MB"
    assert "Traceback" not in served.stop()


def test_max_body_sets_the_limit_and_a_bad_one_is_refused_in_one_line(tmp_path):
    (tmp_path / "hello.scenario.yaml").write_text(SCENARIO)
    server = Served(["hello.scenario.yaml", "--max-body", "2000"], tmp_path)
    try:
        small = {"contents": [{"role": "user", "parts": [{"text": "x" * 1000}]}]}
        large = {"contents": [{"role": "user", "parts": [{"text": "x" * 3000}]}]}
        taken = httpx.post(server.url + GEMINI, json=small, timeout=30)
        refused = httpx.post(server.url + GEMINI, json=large, timeout=30)
    finally:
        server.stop()
    assert taken.status_code == 200, taken.text
    assert refused.status_code == 413
    assert "at most 2000 (harness serve --max-body)" in _error_form(GEMINI, 413, refused.json())
    code = "import sys; from harness.cli import main; sys.exit(main(['serve', *sys.argv[1:]]))"
    for option in (["--max-body", "0"], ["--max-conversations", "0"], ["--conversation-ttl", "0"]):
        bad = subprocess.run(
            [sys.executable, "-c", code, "hello.scenario.yaml", "--port", "0", *option],
            capture_output=True,
            text=True,
            cwd=tmp_path,
            timeout=60,
        )
        assert bad.returncode == 2, bad.stderr
        assert len(bad.stderr.splitlines()) == 1 and option[0] in bad.stderr


def test_a_gemini_key_in_the_query_never_reaches_the_access_log(served):
    body = {"contents": [{"role": "user", "parts": [{"text": "hi"}]}]}
    # A key the server's environment does not hold, sent as Gemini's REST examples do,
    # and however the parameter is spelled; the environment's own key in any parameter.
    other = "AIzaSy" + "Wp4" * 11
    spellings = [f"key={other}", f"alt=sse&key={other}", f"%6Bey={other}", f"KEY={other}"]
    spellings.append(f"token={SECRET}")
    for query in spellings:
        httpx.post(f"{served.url}{GEMINI.split('?')[0]}?{query}", json=body, timeout=30)
    said = served.stop()
    assert "generateContent?" in said  # the access log is on, and shows the requests
    for secret in (SECRET, other):
        assert secret not in said and secret[:12] not in said and secret[-12:] not in said, said
    assert said.count("<credentials>") >= 4 and "token=<GEMINI_API_KEY>" in said, said


# -- in this process: the bounds no one-request test reaches ---------------------------------


class Lines(logging.Handler):
    """The lines a logger writes (uvicorn's do not reach pytest's caplog)."""

    def __init__(self) -> None:
        super().__init__(logging.INFO)
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(record.getMessage())


def _wait_for(check, seconds: float = 60.0) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if check():
            return True
        time.sleep(0.05)
    return False


def _send_head_and_part(url: str, declared: int, part: int) -> socket.socket:
    host, port = url.removeprefix("http://").split(":")
    sock = socket.create_connection((host, int(port)), timeout=60)
    head = (
        f"POST {CHAT} HTTP/1.1\r\nhost: {host}\r\ncontent-type: application/json\r\n"
        f"content-length: {declared}\r\n\r\n"
    ).encode()
    sock.sendall(head + b" " * part)
    return sock


def _answer_of(sock: socket.socket) -> bytes:
    answer = b""
    try:
        while chunk := sock.recv(65536):
            answer += chunk
            if b"\r\n\r\n" in answer and answer.endswith(b"}"):
                break
    except OSError:
        pass
    sock.close()
    return answer


def test_the_bodies_held_at_once_are_bounded():
    limits = BodyLimits(max_body=2**20, max_pending=2**20 + 2**19)
    bounded = BoundedApp(create_app([parse_step(0, {"content": "hi"})]), limits)
    ending = json.dumps({"model": "m", "messages": [{"role": "user", "content": "hi"}]}).encode()
    with serving_in_thread(bounded) as url:
        first = _send_head_and_part(url, 2**20, 800_000)  # JSON may start with spaces
        assert _wait_for(lambda: bounded.held >= 800_000)
        # Sent whole, while the first waits: past what the server holds at once.
        second = _send_head_and_part(url, 2**20, 2**20 - len(ending))
        second.sendall(ending)
        refused = _answer_of(second)
        first.sendall(b" " * (2**20 - 800_000 - len(ending)) + ending)
        answered = _answer_of(first)
        assert _wait_for(lambda: bounded.held == 0)
    assert refused.startswith(b"HTTP/1.1 503 "), refused[:200]
    assert b"holds" in refused and b"bytes of request bodies" in refused
    assert b"retry-after: 1" in refused.lower()
    assert answered.startswith(b"HTTP/1.1 200 "), answered[:200]


def test_clients_that_stop_reading_their_answer_are_cut_off_and_free_their_places():
    # Each answer is far larger than the socket buffers: a client that reads none of it
    # leaves the server's stream waiting to send, for ever without a bound.
    big = "x" * (16 * 2**20)
    app = create_app([parse_step(0, {"content": big, "repeat": 10})])
    limits = ServerLimits(send_timeout=1.0, max_connections=3)
    server_log, lines = logging.getLogger("uvicorn.error"), Lines()
    body = json.dumps({"model": "m", "messages": [{"role": "user", "content": "hi"}]})
    request = (
        f"POST /v1/chat/completions HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\n"
        f"content-length: {len(body)}\r\n\r\n{body}"
    ).encode()
    with running_app(app, limits=limits) as url:
        server_log.addHandler(lines)
        try:
            host, port = url.removeprefix("http://").removesuffix("/v1").split(":")
            idle = []
            for _ in range(3):  # every place the server has
                sock = socket.socket()
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
                sock.connect((host, int(port)))
                sock.sendall(request)
                idle.append(sock)
            cut = _wait_for(lambda: any("not reading their answer" in li for li in lines.lines))
            after = httpx.post(
                url + "/chat/completions",
                json={"model": "m", "messages": [{"role": "user", "content": "hi"}]},
                timeout=60,
            )
        finally:
            server_log.removeHandler(lines)
            for sock in idle:
                sock.close()
    assert cut, lines.lines
    assert after.status_code == 200
    assert len(after.json()["choices"][0]["message"]["content"]) == len(big)


# -- what serve keeps ---------------------------------------------------------------------------


def _chat(system: str, *turns: str) -> dict:
    messages = [{"role": "system", "content": system}]
    for n, text in enumerate(turns):
        messages.append({"role": "user" if n % 2 == 0 else "assistant", "content": text})
    return {"model": "m", "messages": messages}


def _kept(conversations) -> dict[str, int]:
    """How much the conversations' tables hold (their private fields: what memory holds)."""
    tables = ("_nodes", "_stems", "_responses", "_recent", "_kept", "_dialogues")
    return {name: len(getattr(conversations, name)) for name in tables}


def test_a_flood_of_conversations_keeps_a_bounded_number_and_idle_ones_expire():
    from harness.serve._conversations import ConversationLimits, Conversations
    from harness.wires import OPENAI_CHAT

    now = [0.0]
    kept = Conversations(
        limits=ConversationLimits(max_conversations=50, ttl=60), clock=lambda: now[0]
    )

    def ask(body: dict, replies: int = 0):
        place = kept.place(OPENAI_CHAT, body, replies)
        kept.keep(place, f"resp_{place.number}")
        return place

    first = ask(_chat("You coordinate.", "hi"))
    for n in range(3000):  # an agent that never continues a conversation, 3000 times over
        now[0] += 0.001
        ask(_chat(f"You coordinate team {n}.", f"task {n}"))
        if n % 40 == 0:  # the first one is continued now and then: it stays
            again = ask(_chat("You coordinate.", "hi", "hello", f"more {n}"), 1)
            assert again.number == first.number
    sizes = _kept(kept)
    assert sizes["_kept"] <= 50 and sizes["_nodes"] <= 50 + 75, sizes
    assert sizes["_responses"] <= 50 and sizes["_recent"] <= 256, sizes
    assert sizes["_stems"] <= 50 + 75 and sizes["_dialogues"] <= 50 + 75, sizes
    assert ask(_chat("You coordinate.", "hi", "hello", "more")).number == first.number

    now[0] += 61  # idle past the ttl: everything is forgotten at the next request
    late = ask(_chat("You coordinate.", "hi", "hello", "more", "again", "and again"), 2)
    assert late.number != first.number  # a new conversation
    assert _kept(kept)["_kept"] == 1 and _kept(kept)["_nodes"] == 1


def test_long_conversations_keep_a_bounded_number_of_requests():
    from harness.serve._conversations import ConversationLimits, Conversations
    from harness.wires import OPENAI_CHAT

    kept = Conversations(limits=ConversationLimits(max_requests=100))
    numbers = []
    for n in range(10):  # ten conversations of thirty requests each
        turns = [f"team {n}"]
        for k in range(30):
            place = kept.place(OPENAI_CHAT, _chat("You coordinate.", *turns), k)
            kept.keep(place)
            numbers.append(place.number)
            turns += [f"reply {k}", f"more {k}"]
    sizes = _kept(kept)
    assert sizes["_nodes"] <= 100 and sizes["_stems"] <= 100, sizes
    # Each went on as one conversation: the oldest were forgotten, not the one in use.
    assert numbers == [n for n in range(1, 11) for _ in range(30)]


def test_a_forgotten_conversation_of_a_rule_starts_its_script_again():
    from harness.llm._config import ConversationRule
    from harness.serve._conversations import ConversationLimits

    worker = ConversationRule.model_validate(
        {
            "match": {"system_contains": "research"},
            "script": [{"content": "worker 1"}, {"content": "worker 2"}],
        }
    )
    main = [parse_step(i, {"content": f"main {i + 1}"}) for i in range(3)]
    limits = ConversationLimits(max_conversations=1)
    with running_app(create_app(main, conversations=[worker], limits=limits)) as url:

        def ask(body: dict) -> str:
            answer = httpx.post(url + "/chat/completions", json=body, timeout=30).json()
            return answer["choices"][0]["message"]["content"]

        said = [ask(_chat("You research.", "find it"))]
        said.append(ask(_chat("You research.", "find it", said[0], "more")))
        said.append(ask(_chat("You coordinate.", "hi")))  # the one kept now: the worker goes
        said.append(ask(_chat("You research.", "find it", said[0], "more", said[1], "more")))
    assert said == ["worker 1", "worker 2", "main 1", "worker 1"]


def test_repeat_is_bounded_when_the_scenario_is_loaded(tmp_path):
    one = tmp_path / "huge.scenario.yaml"
    one.write_text(
        "input: hi\nllm:\n  script:\n    - content: ok\n      repeat: 1000000000000000000\n"
    )
    many = tmp_path / "many.scenario.yaml"
    steps = "".join("    - content: ok\n      repeat: 9000\n" for _ in range(12))
    many.write_text(f"input: hi\nllm:\n  script:\n{steps}")
    checked = subprocess.run(
        [sys.executable, "-m", "harness.cli", "validate", str(one), str(many)],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=tmp_path,
    )
    lines = (checked.stdout + checked.stderr).splitlines()
    assert checked.returncode == 2, lines
    assert lines[0].startswith("huge.scenario.yaml:5: llm.script.0.repeat: expected 10000 or less")
    assert lines[1].startswith("many.scenario.yaml:3: llm.script: the script gives 108000 replies")
    code = "import sys; from harness.cli import main; sys.exit(main(['serve', *sys.argv[1:]]))"
    started = time.monotonic()
    served = subprocess.run(
        [sys.executable, "-c", code, str(one), "--port", "0"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert served.returncode == 2 and len(served.stderr.splitlines()) == 1, served.stderr
    assert "repeat: expected 10000 or less" in served.stderr
    assert time.monotonic() - started < 50  # refused, not laid out reply by reply


def test_a_scenarios_own_repeat_is_bounded_when_it_is_loaded(tmp_path):
    # A run per repeat: 10**18 of them is a collection that never ends. Each form of it.
    huge = 10**18
    forms = {
        "plain": f"repeat: {huge}",
        "runs": f"repeat: {{runs: {huge}}}",
        "sequential": f"repeat: {{max_runs: {huge}, decide: sequential, min_pass_rate: 0.8}}",
        "at the bound": "repeat: 10000",
    }
    for name, repeat in forms.items():
        text = f"input: hi\n{repeat}\nllm:\n  script:\n    - content: ok\n"
        (tmp_path / f"{name}.scenario.yaml").write_text(text)
    checked = subprocess.run(
        [sys.executable, "-m", "harness.cli", "validate", *(f"{n}.scenario.yaml" for n in forms)],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=tmp_path,
    )
    assert checked.returncode == 2, checked.stdout + checked.stderr
    assert checked.stderr.strip() == "3 of 4 scenario file(s) invalid"
    lines = checked.stdout.splitlines()
    assert [line.partition(" ")[0] for line in lines] == [
        "plain.scenario.yaml:2:",
        "runs.scenario.yaml:2:",
        "sequential.scenario.yaml:2:",
    ], lines
    assert "from 1 to 10000, got 1000000000000000000" in lines[0]
    assert "repeat.runs: expected 10000 or less" in lines[1]
    assert "repeat.max_runs: expected 10000 or less" in lines[2]


def test_a_body_sent_without_its_length_is_bounded_as_it_comes():
    # Chunked: no length to refuse it by, and more than the server may take; the answer
    # comes while the client is still sending, once four times the limit went by.
    bounded = BoundedApp(
        create_app([parse_step(0, {"content": "hi"})]), BodyLimits(max_body=100_000)
    )
    with serving_in_thread(bounded) as url:
        host, port = url.removeprefix("http://").split(":")
        sock = socket.create_connection((host, int(port)), timeout=60)
        sock.sendall(
            f"POST /v1/messages HTTP/1.1\r\nhost: {host}\r\ncontent-type: application/json\r\n"
            "transfer-encoding: chunked\r\n\r\n".encode()
        )
        piece = b"a" * 10_000
        chunk = f"{len(piece):x}\r\n".encode() + piece + b"\r\n"
        sent = 0
        sock.settimeout(0.001)
        answer = b""
        while sent < 100 * 100_000 and not answer:
            sock.sendall(chunk)
            sent += len(piece)
            with contextlib.suppress(TimeoutError):
                answer = sock.recv(65536)
        sock.settimeout(60)
        answer += _answer_of(sock)
        assert _wait_for(lambda: bounded.held == 0)
    assert answer.startswith(b"HTTP/1.1 413 "), answer[:300]
    assert sent <= 6 * 100_000  # answered once four times the limit was read, not at the end
    head, _, body = answer.partition(b"\r\n\r\n")
    assert b"connection: close" in head
    assert "100000" in _error_form(MESSAGES, 413, json.loads(body))


def test_a_body_of_the_limit_is_taken_and_one_byte_more_refused():
    bounded = BoundedApp(
        create_app([parse_step(0, {"content": "hi", "repeat": 9})]), BodyLimits(max_body=10_000)
    )
    with serving_in_thread(bounded) as url:
        for declared in (True, False):
            for size, status in ((10_000, 200), (10_001, 413)):
                text = json.dumps({"model": "m", "messages": [{"role": "user", "content": ""}]})
                body = text.replace('""', '"' + "x" * (size - len(text)) + '"').encode()
                assert len(body) == size
                # Without its length: sent in pieces (chunked), counted as they come.
                content = body if declared else iter([body[:5000], body[5000:]])
                answer = httpx.post(url + CHAT, content=content, timeout=30)
                assert answer.status_code == status, (declared, size, answer.text[:200])


def _depth(value) -> int:
    if isinstance(value, dict | list):
        inner = value.values() if isinstance(value, dict) else value
        return 1 + max((_depth(v) for v in inner), default=0)
    return 0


def _nested(levels: int):
    value = "deep"
    for n in range(levels):
        value = {"a": value} if n % 2 else [value]
    return value


BODIES = {
    CHAT: lambda extra: {
        "model": "m",
        "messages": [{"role": "user", "content": "hi"}],
        "metadata": extra,
    },
    RESPONSES: lambda extra: {"model": "m", "input": "hi", "metadata": extra},
    MESSAGES: lambda extra: {
        "model": "m",
        "max_tokens": 9,
        "messages": [{"role": "user", "content": "hi"}],
        "metadata": extra,
    },
    COUNT: lambda extra: {
        "model": "m",
        "messages": [{"role": "user", "content": "hi"}],
        "metadata": extra,
    },
    GEMINI: lambda extra: {
        "contents": [{"role": "user", "parts": [{"text": "hi"}]}],
        "labels": extra,
    },
    GEMINI_STREAM: lambda extra: {
        "contents": [{"role": "user", "parts": [{"text": "hi"}]}],
        "labels": extra,
    },
}


def test_json_nested_to_the_limit_is_taken_and_one_level_more_refused():
    app = create_app([parse_step(0, {"content": "hi", "repeat": 20})])
    with running_app(app) as url:
        root = url.removesuffix("/v1")
        for path, body in BODIES.items():
            taken, refused = body(_nested(99)), body(_nested(100))
            assert (_depth(taken), _depth(refused)) == (100, 101)
            ok = httpx.post(root + path, json=taken, timeout=30)
            no = httpx.post(root + path, json=refused, timeout=30)
            assert ok.status_code == 200, (path, ok.text[:300])
            assert no.status_code == 400, (path, no.text[:300])
            assert "nested deeper than 100 levels (at " in _error_form(path, 400, no.json())


def _read_answer(sock: socket.socket, pause: float) -> bytes:
    """One whole answer (its content-length), read a piece every ``pause`` seconds."""
    data = b""

    def more() -> bytes:
        piece = sock.recv(65536)
        if not piece:
            raise AssertionError(f"the server closed the connection after {len(data)} bytes")
        return piece

    while b"\r\n\r\n" not in data:
        data += more()
    head, _, body = data.partition(b"\r\n\r\n")
    length = int(head.lower().split(b"content-length:")[1].split(b"\r\n")[0])
    while len(body) < length:
        body += more()
        time.sleep(pause)
    return head + b"\r\n\r\n" + body


def test_a_client_reading_its_answer_slowly_but_steadily_is_not_cut_off():
    # About 2 MB a second, while the server's send buffer holds some 4 MB: the kernel lets
    # the server write again only after long gaps, yet the client takes some of its
    # answer in every 0.3 s: it is reading, and keeps its connection.
    big = "x" * (8 * 2**20)
    app = create_app([parse_step(0, {"content": big, "repeat": 2})])
    body = json.dumps({"model": "m", "messages": [{"role": "user", "content": "hi"}]})
    request = (
        f"POST /v1/chat/completions HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\n"
        f"content-length: {len(body)}\r\n\r\n{body}"
    ).encode()
    with running_app(app, limits=ServerLimits(send_timeout=0.3)) as url:
        host, port = url.removeprefix("http://").removesuffix("/v1").split(":")
        sock = socket.create_connection((host, int(port)), timeout=30)
        try:
            sock.sendall(request)
            started = time.monotonic()
            first = _read_answer(sock, 0.03)
            took = time.monotonic() - started
            time.sleep(1.0)  # idle on the kept-alive connection, past the send timeout
            sock.sendall(request)
            second = _read_answer(sock, 0)
        finally:
            sock.close()
    assert took > 1.0  # far slower than the send timeout, all along
    assert first.startswith(b"HTTP/1.1 200 ") and len(first) > len(big)
    assert second.startswith(b"HTTP/1.1 200 ") and len(second) > len(big)


def test_the_attempt_counts_kept_are_bounded(monkeypatch):
    import harness.serve._state as state_module
    from harness.serve._state import ScriptState

    monkeypatch.setattr(state_module, "_MAX_ATTEMPTS", 50)
    steps = [
        parse_step(0, {"error": {"status": 429, "message": "slow down"}}),
        parse_step(1, {"content": "ok"}),
    ]
    state = ScriptState(steps)
    for n in range(1000):  # a thousand conversations, each failed once
        assert state.pick(0, [{"role": "user", "content": f"task {n}"}], "chat").error is not None
    assert len(state.attempts) <= 50
    # The latest ones are still counted: their retry gets the reply.
    assert state.pick(0, [{"role": "user", "content": "task 999"}], "chat").step is not None


def test_the_message_threads_held_are_bounded():
    # Each `thread: {type: create}` answered holds the whole conversation under the reply's
    # id, until it is continued: a client that only creates threads held them all.
    from harness.serve._threads import Threads
    from harness.wires import ANTHROPIC_MESSAGES

    threads = Threads(most=20)
    # A flood, then twenty more, msg_0 held anew just before the last: it is among the
    # newest, not let go.
    for n in [*range(1000, 1500), *range(20), 0, 20]:
        body = {
            "model": "m",
            "max_tokens": 9,
            "thread": {"type": "create"},
            "messages": [{"role": "user", "content": f"task {n} " + "x" * 1000}],
        }
        answer = {
            "id": f"msg_{n}",
            "type": "message",
            "role": "assistant",
            "model": "m",
            "content": [{"type": "text", "text": "ok"}],
            "stop_reason": "end_turn",
            "usage": {"input_tokens": 1, "output_tokens": 1},
        }
        threads.keep(ANTHROPIC_MESSAGES, body, body, (answer, False))
    assert len(threads._held) == 20
    # The newest are held: a continue of one is served; the oldest are a 404 (the SDK
    # sends the whole conversation again).
    latest = {"model": "m", "max_tokens": 9, "messages": [{"role": "user", "content": "more"}]}
    latest["thread"] = {"type": "continue", "previous_message_id": "msg_20"}
    assert len(threads.resume(ANTHROPIC_MESSAGES, latest)["messages"]) == 3
    from harness.wires._neutral import WireError

    oldest = {**latest, "thread": {"type": "continue", "previous_message_id": "msg_0"}}
    assert len(threads.resume(ANTHROPIC_MESSAGES, oldest)["messages"]) == 3
    for let_go in ("msg_1", "msg_1499"):
        gone = {**latest, "thread": {"type": "continue", "previous_message_id": let_go}}
        with pytest.raises(WireError, match="thread_not_found"):
            threads.resume(ANTHROPIC_MESSAGES, gone)


def test_forgetting_a_conversation_keeps_what_a_newer_one_shares_with_it():
    # Two conversations with the same messages under other system texts share their
    # dialogue key (an agent handing over to another continues it): forgetting the older
    # leaves the newer's.
    from harness.serve._conversations import ConversationLimits, Conversations
    from harness.wires import OPENAI_CHAT

    kept = Conversations(limits=ConversationLimits(max_conversations=1))

    def ask(body: dict, replies: int = 0):
        place = kept.place(OPENAI_CHAT, body, replies)
        kept.keep(place)
        return place

    ask(_chat("You triage.", "hi"))
    newer = ask(_chat("You research.", "hi"))  # the older one is forgotten now
    handed = ask(_chat("You write.", "hi", "hello", "more"), 1)
    assert handed.number == newer.number
