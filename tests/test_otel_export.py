"""``harness run --otel FILE`` and ``--otel-endpoint URL``: every run as OpenTelemetry
GenAI spans, written as OTLP JSON or sent over OTLP/HTTP to a collector.

The collector here is a real HTTP server on 127.0.0.1 that decodes what the SDK's OTLP
exporter posts with opentelemetry-proto, as a collector does.
"""

from __future__ import annotations

import json
import shutil
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from google.protobuf import json_format
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from scenario_texts import PASSING, SESSION_TESTS

from harness import cli

pytestmark = SESSION_TESTS
REPO = Path(__file__).resolve().parents[1]

FAILING_EXPECTATION = PASSING.replace("name: greet", "name: hopeful").replace(
    "contains: 72F", "contains: rain"
)


class _Collector(BaseHTTPRequestHandler):
    """An OTLP/HTTP trace receiver: decodes each protobuf request it is posted."""

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers["Content-Length"]))
        request = ExportTraceServiceRequest.FromString(body)
        self.server.received.append((self.path, self.headers["Content-Type"], request))  # type: ignore[attr-defined]
        taken = getattr(self.server, "takes", None)
        if taken is not None and len(self.server.received) > taken:  # type: ignore[attr-defined]
            self.send_response(400)  # refused, and not worth retrying
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        self.send_response(200)
        self.send_header("Content-Type", "application/x-protobuf")
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def collector():
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Collector)
    server.received = []  # type: ignore[attr-defined]
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server
    server.shutdown()
    server.server_close()
    thread.join()


@pytest.fixture
def project(pytester, monkeypatch):
    """A project with the repository's sub-agent and remote-agent examples and two more."""
    (pytester.path / "pyproject.toml").write_text("[project]\nname = 'demo'\n")
    scenarios = pytester.path / "scenarios"
    shutil.copytree(REPO / "scenarios" / "agents", scenarios / "agents")
    shutil.copytree(REPO / "scenarios" / "remote", scenarios / "remote")
    (scenarios / "greet.scenario.yaml").write_text(PASSING)
    (scenarios / "hopeful.scenario.yaml").write_text(FAILING_EXPECTATION)
    monkeypatch.chdir(pytester.path)
    return pytester.path


def _run(*args: str) -> int:
    return cli.main(["run", *args])


def _spans(request) -> dict[str, list]:
    """Each trace's spans (trace id -> spans), as decoded."""
    traces: dict[str, list] = {}
    for resource_spans in request.resource_spans:
        for scope_spans in resource_spans.scope_spans:
            for span in scope_spans.spans:
                traces.setdefault(span.trace_id.hex(), []).append(span)
    return traces


def _attributes(span) -> dict:
    return {kv.key: json_format.MessageToDict(kv.value) for kv in span.attributes}


def _value(attributes: dict, key: str):
    (value,) = attributes[key].values()
    return value


def _by_scenario(request) -> dict[str, list]:
    found = {}
    for spans in _spans(request).values():
        (root,) = [s for s in spans if not s.parent_span_id]
        found[_value(_attributes(root), "harness.scenario.id")] = spans
    return found


def test_runs_reach_a_collector_as_genai_spans_over_otlp_http(project, collector):
    url = f"http://127.0.0.1:{collector.server_address[1]}"
    assert _run("scenarios", "--otel-endpoint", url) == 1  # one scenario fails
    ((path, content_type, request),) = collector.received
    assert path == "/v1/traces" and content_type == "application/x-protobuf"
    (resource_spans,) = request.resource_spans
    assert _attributes(resource_spans.resource) == {"service.name": {"stringValue": "harness"}}
    runs = _by_scenario(request)
    assert sorted(runs) == [
        "scenarios/agents/coordinator.scenario.yaml::coordinator-with-two-sub-agents",
        "scenarios/greet.scenario.yaml::greet",
        "scenarios/hopeful.scenario.yaml::hopeful",
        "scenarios/remote/coordinator.scenario.yaml::remote-coordinator",
        "scenarios/remote/researcher.scenario.yaml::remote-researcher",
    ]

    # One run: invoke_agent, then chat, execute_tool, chat under it, in time order.
    spans = runs["scenarios/greet.scenario.yaml::greet"]
    root = next(s for s in spans if not s.parent_span_id)
    children = sorted((s for s in spans if s.parent_span_id), key=lambda s: s.start_time_unix_nano)
    assert root.name == "invoke_agent greet" and root.kind == root.SPAN_KIND_INTERNAL
    chat = "chat harness-script"  # a script answered: its model is serve's name for it
    assert [s.name for s in children] == [chat, "execute_tool get_weather", chat]
    assert all(s.parent_span_id == root.span_id for s in children)
    assert [s.kind for s in children] == [
        root.SPAN_KIND_CLIENT,
        root.SPAN_KIND_INTERNAL,
        root.SPAN_KIND_CLIENT,
    ]
    top = _attributes(root)
    assert _value(top, "gen_ai.operation.name") == "invoke_agent"
    assert _value(top, "gen_ai.agent.name") == "greet"
    assert _value(top, "gen_ai.provider.name") == "harness"
    assert _value(top, "harness.scenario.status") == "passed"
    assert _value(top, "harness.termination") == "completed"
    first, tool, second = (_attributes(s) for s in children)
    assert _value(first, "gen_ai.operation.name") == "chat"
    assert _value(first, "gen_ai.request.model") == "harness-script"
    assert first["gen_ai.response.finish_reasons"] == {
        "arrayValue": {"values": [{"stringValue": "tool_calls"}]}
    }
    assert _value(tool, "gen_ai.operation.name") == "execute_tool"
    assert _value(tool, "gen_ai.tool.name") == "get_weather"
    assert _value(tool, "gen_ai.tool.call.id") == "call_1_0"
    assert _value(second, "harness.llm.call") == "2"
    # No contents without --otel-content.
    assert not any(key.startswith(("gen_ai.input", "gen_ai.output")) for key in first)
    assert "gen_ai.tool.call.arguments" not in tool
    # Each expectation is an evaluation event on the run's span.
    assert [e.name for e in root.events] == ["gen_ai.evaluation.result"] * 2
    assert all(e.time_unix_nano == root.end_time_unix_nano for e in root.events)
    termination, event = root.events
    assert _value(_attributes(termination), "gen_ai.evaluation.name") == "termination"
    assert {kv.key: json_format.MessageToDict(kv.value) for kv in event.attributes} == {
        "gen_ai.evaluation.name": {"stringValue": "final.contains"},
        "gen_ai.evaluation.score.label": {"stringValue": "pass"},
        "gen_ai.evaluation.score.value": {"doubleValue": 1.0},
        "gen_ai.evaluation.explanation": {
            "stringValue": 'expected ["72F"], got "It is 72F in SF."'
        },
    }
    (root,) = [s for s in runs["scenarios/hopeful.scenario.yaml::hopeful"] if not s.parent_span_id]
    assert _value(_attributes(root), "harness.scenario.status") == "failed"
    verdicts = [
        (
            _value(_attributes(e), "gen_ai.evaluation.name"),
            _value(_attributes(e), "gen_ai.evaluation.score.label"),
        )
        for e in root.events
    ]
    assert verdicts == [("termination", "pass"), ("final.contains", "fail")]


def test_a_large_session_reaches_the_collector_in_batches_each_run_once(
    project, collector, monkeypatch
):
    # A suite's traces go out a batch at a time (never all in memory): every run in one
    # request only, in id order across the requests.
    from harness.otel import _collector as sending

    monkeypatch.setattr(sending, "BATCH", 2)
    url = f"http://127.0.0.1:{collector.server_address[1]}"
    assert _run("scenarios", "--otel-endpoint", url) == 1
    assert len(collector.received) == 3  # 5 runs, 2 a request
    sent = [sorted(_by_scenario(request)) for _, _, request in collector.received]
    assert [len(ids) for ids in sent] == [2, 2, 1]
    ids = [i for batch in sent for i in batch]
    assert ids == sorted(ids) and len(set(ids)) == 5


def test_a_batch_refused_stops_the_sending_and_says_how_many_went_before(
    project, collector, monkeypatch, capsys
):
    from harness.otel import _collector as sending

    monkeypatch.setattr(sending, "BATCH", 2)
    collector.takes = 2  # the third request is refused
    url = f"http://127.0.0.1:{collector.server_address[1]}"
    assert _run("scenarios", "--otel-endpoint", url) == 3
    assert len(collector.received) == 3
    out = capsys.readouterr()
    (line,) = [x for x in (out.out + out.err).splitlines() if "traces not exported" in x]
    assert "(after 4 run(s)' traces were sent)" in line and "400" in line
    assert Path("reports/results.json").exists()


def test_sub_agents_and_remote_agents_are_nested_under_their_calls(project, collector):
    url = f"http://127.0.0.1:{collector.server_address[1]}/v1/traces"
    _run("scenarios/agents", "scenarios/remote", "--otel-endpoint", url)
    ((_, _, request),) = collector.received
    runs = _by_scenario(request)

    spans = runs["scenarios/agents/coordinator.scenario.yaml::coordinator-with-two-sub-agents"]
    by_id = {s.span_id: s for s in spans}
    sub_agents = [s for s in spans if s.name.startswith("invoke_agent") and s.parent_span_id]
    assert sorted(s.name for s in sub_agents) == ["invoke_agent fetcher", "invoke_agent researcher"]
    for sub in sub_agents:
        call = by_id[sub.parent_span_id]
        assert call.name == "execute_tool " + sub.name.split()[-1]
        # The sub-agent's own calls are under its span, within its call's time.
        inner = [s for s in spans if s.parent_span_id == sub.span_id]
        assert inner and all(call.start_time_unix_nano <= s.start_time_unix_nano for s in inner)
        assert all(s.end_time_unix_nano <= call.end_time_unix_nano for s in inner)
    fetcher = next(s for s in sub_agents if s.name == "invoke_agent fetcher")
    assert _value(_attributes(fetcher), "error.type") == "max_iterations"
    assert fetcher.status.code == fetcher.status.STATUS_CODE_ERROR
    researcher = next(s for s in sub_agents if s.name == "invoke_agent researcher")
    inner_names = [s.name for s in spans if s.parent_span_id == researcher.span_id]
    assert inner_names.count("chat harness-script") == 2
    assert "execute_tool search_notes" in inner_names

    spans = runs["scenarios/remote/coordinator.scenario.yaml::remote-coordinator"]
    by_id = {s.span_id: s for s in spans}
    remote = [s for s in spans if s.name == "invoke_agent researcher"]
    assert len(remote) == 2
    for span in remote:
        assert span.kind == span.SPAN_KIND_CLIENT
        assert by_id[span.parent_span_id].name == "execute_tool researcher"
        assert (
            _value(_attributes(span), "harness.remote.address")
            == "scenario researcher.scenario.yaml"
        )


def test_the_file_is_otlp_json_and_byte_identical_across_runs(project):
    assert _run("scenarios/greet.scenario.yaml", "--otel", "one.json") == 0
    assert _run("scenarios/greet.scenario.yaml", "--otel", "two.json") == 0
    one = Path("one.json").read_bytes()
    assert one == Path("two.json").read_bytes()
    assert one.count(b"\n") == 1  # one request, one line: JSON Lines as collectors write
    data = json.loads(one)
    (span, *_) = data["resourceSpans"][0]["scopeSpans"][0]["spans"]
    assert len(span["traceId"]) == 32 and int(span["traceId"], 16)
    assert len(span["spanId"]) == 16
    # The simulated clock from 2025-01-01T00:00:00Z, as strings of unix nanoseconds.
    assert span["startTimeUnixNano"] == "1735689600000000000"
    assert span["kind"] == 1


def _sdk_json(traces) -> str:
    """What the SDK's OTLP encoder makes of the spans, in protobuf's JSON mapping with the
    ids as hex (protobuf writes bytes as base64)."""
    import base64

    from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans

    from harness.otel import readable_spans

    data = json_format.MessageToDict(
        encode_spans(readable_spans(traces)), use_integers_for_enums=True
    )
    for span in data["resourceSpans"][0]["scopeSpans"][0]["spans"]:
        for key in ("traceId", "spanId", "parentSpanId"):
            if key in span:
                span[key] = base64.b64decode(span[key]).hex()
    return json.dumps(data, ensure_ascii=False, separators=(",", ":")) + "\n"


def test_the_file_holds_what_the_sdk_encoder_makes_of_the_same_spans(project):
    from harness._results import load_results
    from harness.otel import Clock, RunFacts, otlp_json, plan_trace
    from harness.pytest_plugin._tracing import _traced

    _run("scenarios", "--otel-content", "--otel", "t.json")
    results = sorted(load_results("reports/results.json").scenarios, key=lambda r: r.id)
    traces = [plan_trace(_traced(r, RunFacts()), Clock(), content=True) for r in results]
    assert otlp_json(traces) == _sdk_json(traces)
    assert any(span.error for trace in traces for span in trace.spans)  # statuses too


def test_a_collector_that_cannot_be_reached_is_one_line_and_the_reports_are_kept(
    project, capsys, monkeypatch
):
    import socket

    # A port nothing listens on; the exporter retries for the time OpenTelemetry's own
    # setting gives it, as any exporter does.
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_TRACES_TIMEOUT", "1")
    with socket.socket() as held:
        # Bound and not listening for the whole run: refused, and no other process of
        # the machine can take the port meanwhile.
        held.bind(("127.0.0.1", 0))
        port = held.getsockname()[1]
        url = f"http://user:hunter2secret@127.0.0.1:{port}"
        code = _run("scenarios/greet.scenario.yaml", "--otel-endpoint", url, "--otel", "t.json")
    assert code == 3
    out = capsys.readouterr()
    text = out.out + out.err
    (line,) = [line for line in text.splitlines() if "traces not exported" in line]
    assert "spans not sent to http://" in line and "Connection refused" in line
    assert "hunter2secret" not in text
    assert "Traceback" not in text
    assert Path("reports/results.json").exists() and Path("t.json").exists()


def test_options_given_wrong_are_one_line_and_exit_2(project, capsys):
    assert _run("scenarios/greet.scenario.yaml", "--otel-endpoint", "localhost:4318") == 2
    err = capsys.readouterr().err
    assert "--otel-endpoint: expected a collector's http:// or https:// URL" in err
    assert "Traceback" not in err
    assert _run("scenarios/greet.scenario.yaml", "--otel-content") == 2
    out = capsys.readouterr()
    (line,) = [x for x in (out.out + out.err).splitlines() if "--harness-otel-content" in x]
    assert "give --harness-otel FILE or --harness-otel-endpoint URL too" in line
    assert not Path("reports/results.json").exists()


def _chat_models(path: str) -> list:
    data = json.loads(Path(path).read_text().splitlines()[0])
    spans = [s for r in data["resourceSpans"] for ss in r["scopeSpans"] for s in ss["spans"]]
    models = []
    for span in spans:
        attributes = {a["key"]: a["value"] for a in span["attributes"]}
        if attributes["gen_ai.operation.name"] == {"stringValue": "chat"}:
            models.append((span["name"], attributes.get("gen_ai.request.model")))
    return models


@pytest.mark.parametrize(
    ("example", "model"),
    [("anthropic-sync", "claude-sonnet-4-6"), ("gemini-sync", "gemini-2.5-flash")],
)
def test_a_targets_chat_spans_name_the_model_its_requests_named(project, example, model):
    pytest.importorskip("anthropic")
    pytest.importorskip("google.genai")
    shutil.copytree(REPO / "scenarios" / "external", project / "scenarios" / "external")
    (project / "scenarios" / "__init__.py").write_text("")

    assert _run(f"scenarios/external/{example}.scenario.yaml", "--otel", "trace.json") == 0

    assert _chat_models("trace.json") == [(f"chat {model}", {"stringValue": model})] * 3


def test_a_scripted_runs_chat_spans_name_the_scripts_model(project):
    assert _run("scenarios/greet.scenario.yaml", "--otel", "trace.json") == 0
    models = _chat_models("trace.json")
    assert models and all(
        m == ("chat harness-script", {"stringValue": "harness-script"}) for m in models
    )


def test_secrets_are_masked_in_the_trace_file_and_the_spans_sent(pytester, monkeypatch, collector):
    # The leaky tools of test_secrets_in_outputs: a result that says the key, a failure
    # that names the project; a plugin whose bug quotes the key ends a run in error.
    from test_secrets_in_outputs import CRASH, CRASHING_PLUGIN, LEAKY_TOOLS, SCENARIO, SECRETS

    for name, value in SECRETS.items():
        monkeypatch.setenv(name, value)
    (pytester.path / "pyproject.toml").write_text(
        "[project]\nname = 'demo'\n[tool.harness]\nplugins = ['crashing']\n"
    )
    (pytester.path / "leaky_tools.py").write_text(LEAKY_TOOLS)
    (pytester.path / "crashing.py").write_text(CRASHING_PLUGIN)
    scenarios = pytester.path / "scenarios"
    scenarios.mkdir()
    # An evaluation whose explanation quotes what the model was sent: the key, too.
    asked = 'expect:\n  requests: [{call: 2, tool_results_include: ["key="]}]\n'
    (scenarios / "leaky.scenario.yaml").write_text(SCENARIO.replace("expect:\n", asked))
    (scenarios / "crash.scenario.yaml").write_text(CRASH)
    monkeypatch.chdir(pytester.path)
    monkeypatch.syspath_prepend(str(pytester.path))
    url = f"http://127.0.0.1:{collector.server_address[1]}"
    args = ["scenarios", "--otel", "trace.json", "--otel-endpoint", url, "--otel-content"]
    assert _run(*args) == 1
    written = (pytester.path / "trace.json").read_text()
    sent = "".join(json_format.MessageToJson(request) for _, _, request in collector.received)
    for where, text in (("the file", written), ("the spans sent", sent)):
        # The secrets did flow into the spans: their masks are where they would have been.
        assert "key=<OPENAI_API_KEY> org=<OPENAI_ORG_ID>" in text, where  # a call's result
        assert "rejected project <OPENAI_PROJECT_ID>" in text, where  # a failed call
        assert "bad credentials <OPENAI_API_KEY>" in text, where  # a run's error status
        assert '"tool_results":["key=<OPENAI_API_KEY>' in text.replace('\\"', '"'), where
        for name, value in SECRETS.items():
            assert value not in text, f"{name}'s value reached {where}"
