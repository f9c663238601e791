"""A run's failures in its trace: a tool that failed, a model call that failed and a run
that ended in error are spans with an error status, as a tracing backend shows them red;
contents only with --otel-content; token counts under their own names.

Each test failed against a hand-made mutant that the other OpenTelemetry tests let pass
(scripts/mutation.py).
"""

from __future__ import annotations

import pytest

from harness.otel import Clock, RunFacts, plan_trace
from harness.pytest_plugin._tracing import _traced
from harness.scenario import run_scenario

SCENARIO = """\
input: What is the weather in Paris?
tools:
  get_weather:
    parameters: {city: str}
    returns: sunny
    errors: [{on_call: 1, raise: weather service down}]
llm:
  script:
    - tool_calls: [{get_weather: {city: Paris}}]
      usage: {prompt_tokens: 11, completion_tokens: 5}
    - error: {status: 503, message: The model is overloaded}
"""


@pytest.fixture
def failed_run(tmp_path, monkeypatch, fresh_plugins):
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "t"\n')
    monkeypatch.chdir(tmp_path)
    path = tmp_path / "weather.scenario.yaml"
    path.write_text(SCENARIO)
    result = run_scenario(path)
    assert result.termination == "llm_error", result.final
    return result


def _spans(result, content: bool) -> dict[str, list]:
    trace = plan_trace(_traced(result, RunFacts()), Clock(), content=content)
    spans: dict[str, list] = {}
    for span in trace.spans:
        spans.setdefault(span.name.split(" ")[0], []).append(span)
    return spans


def test_each_failure_of_a_run_is_a_span_in_error(failed_run):
    spans = _spans(failed_run, content=False)
    (root,) = spans["invoke_agent"]
    (tool,) = spans["execute_tool"]
    first, second = spans["chat"]
    assert tool.error and tool.attributes["error.type"] == "error"
    assert "weather service down" in tool.error
    assert first.error is None and "error.type" not in first.attributes
    assert second.error == "The model is overloaded"
    assert second.attributes["http.response.status_code"] == 503
    assert root.error and root.attributes["error.type"] == "http_error"


def test_tool_arguments_and_results_are_exported_only_with_content(failed_run):
    without = _spans(failed_run, content=False)["execute_tool"][0].attributes
    assert "gen_ai.tool.call.arguments" not in without
    assert "gen_ai.tool.call.result" not in without
    with_content = _spans(failed_run, content=True)["execute_tool"][0].attributes
    assert with_content["gen_ai.tool.call.arguments"] == '{"city":"Paris"}'


def test_input_and_output_tokens_are_each_their_own(failed_run):
    first = _spans(failed_run, content=False)["chat"][0].attributes
    assert first["gen_ai.usage.input_tokens"] == 11
    assert first["gen_ai.usage.output_tokens"] == 5


def test_a_collector_s_root_url_gets_the_traces_path():
    from harness.otel import endpoint_url

    assert endpoint_url("http://127.0.0.1:4318") == "http://127.0.0.1:4318/v1/traces"
    assert endpoint_url("http://127.0.0.1:4318/") == "http://127.0.0.1:4318/v1/traces"
    assert endpoint_url("http://127.0.0.1:4318/custom") == "http://127.0.0.1:4318/custom"


def test_a_failed_export_s_line_shows_no_password_of_the_endpoint(failed_run):
    # --otel-endpoint http://user:password@host/...: the line saying the spans were not
    # sent names the collector, never its credentials.
    import socket

    from harness.otel import OtelError, send

    with socket.socket() as probe:  # a port nothing listens on: the export fails at once
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    trace = plan_trace(_traced(failed_run, RunFacts()), Clock())
    with pytest.raises(OtelError) as failed:
        send(f"http://me:s3cret-pass-9f8e7d@127.0.0.1:{port}/v1/traces", [trace], timeout=2)
    said = str(failed.value)
    assert "spans not sent to http://" in said and "127.0.0.1" in said
    assert "s3cret" not in said


def test_an_export_whose_time_runs_out_mid_retry_is_the_failed_export_s_one_line(failed_run):
    # The exporter's retries can hand the HTTP client a deadline already past (on a busy
    # machine, a retry's wait ends at it; here the whole time is shorter than one request):
    # urllib3 then refuses the negative timeout with a ValueError, which is the export
    # failing, said as any failed export is, with the error the first attempt met.
    import socket

    from harness.otel import OtelError, send

    with socket.socket() as held:  # bound, not listening: refused
        held.bind(("127.0.0.1", 0))
        port = held.getsockname()[1]
        trace = plan_trace(_traced(failed_run, RunFacts()), Clock())
        with pytest.raises(OtelError) as failed:
            send(f"http://127.0.0.1:{port}/v1/traces", [trace], timeout=1e-9)
    assert str(failed.value).startswith(f"spans not sent to http://127.0.0.1:{port}/v1/traces: ")
