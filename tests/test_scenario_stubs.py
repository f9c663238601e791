"""Tool stubs: argument validation, Jinja results, per-call results and errors, latency, use:."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest

from harness._errors import ScenarioError
from harness.scenario import build_tools, load_scenario, run_scenario
from harness.scenario._params import parse_type
from harness.scenario._templates import seed_for


def write(tmp_path: Path, text: str, name: str = "case.scenario.yaml") -> Path:
    path = tmp_path / name
    path.write_text(textwrap.dedent(text), encoding="utf-8")
    return path


def tool_results(result) -> list:
    return [r.result for r in result.tool_calls]


def test_short_form_types_validate_like_real_tools(tmp_path):
    path = write(
        tmp_path,
        """\
        name: types
        input: go
        agent: {planner: react, on_validation_error: retry}
        tools:
          t:
            parameters:
              s: str
              n: int
              tags: list[str]
              maybe: str | None
              mode: "Literal['fast', 'slow']"
              limit: {type: int, default: 3, description: how many}
            returns: "{{ args.s }} {{ args.n }} {{ args.tags|join(',') }} {{ args.maybe }} {{ args.mode }} {{ args.limit }}"
        llm:
          script:
            - tool_calls:
                - {t: {s: a, n: 1, tags: [x, y], maybe: null, mode: fast}}
                - {t: {s: a, n: one, tags: x, maybe: 1, mode: medium, extra: 1}}
            - content: done
        """,
    )
    result = run_scenario(path)
    ok, bad = result.tool_calls
    assert ok.status == "ok" and ok.result == "a 1 x,y None fast 3"
    assert bad.status == "invalid"
    for fragment in ("n: ", "tags: ", "maybe: ", "mode: ", "extra: Extra inputs are not permitted"):
        assert fragment in bad.result
    schema = build_tools(load_scenario(path))["t"].openai_schema()["function"]["parameters"]
    assert schema["properties"]["limit"] == {
        "default": 3,
        "description": "how many",
        "type": "integer",
    }
    assert sorted(schema["required"]) == ["maybe", "mode", "n", "s", "tags"]
    assert schema["additionalProperties"] is False


@pytest.mark.parametrize(
    ("text", "accepted", "rejected"),
    [
        ("int", 3, "x"),
        ("float", 1.5, "x"),
        ("bool", True, "maybe"),
        ("list[int]", [1, 2], ["a"]),
        ("dict", {"a": 1}, [1]),
        ("int | None", None, "x"),
        ("Literal['a', 'b']", "a", "c"),
        ("dict[str, int]", {"a": 1}, {"a": "x"}),
    ],
)
def test_parse_type(text, accepted, rejected):
    from pydantic import TypeAdapter, ValidationError

    adapter = TypeAdapter(parse_type(text))
    adapter.validate_python(accepted)
    with pytest.raises(ValidationError):
        adapter.validate_python(rejected)


def test_json_schema_parameters_are_checked_with_jsonschema(tmp_path):
    path = write(
        tmp_path,
        """\
        name: schema
        input: go
        agent: {planner: react, on_validation_error: retry}
        tools:
          search:
            schema:
              type: object
              properties:
                query: {type: string, minLength: 2}
                page: {type: integer, minimum: 1}
              required: [query]
            returns: "results for {{ args.query }}"
        llm:
          script:
            - tool_calls: [{search: {query: cats}}, {search: {query: c, page: 0}}, {search: {query: dogs, x: 1}}]
            - content: done
        """,
    )
    result = run_scenario(path)
    statuses = [r.status for r in result.tool_calls]
    assert statuses == ["ok", "invalid", "invalid"]
    assert "too short" in result.tool_calls[1].result and "minimum" in result.tool_calls[1].result
    assert "Additional properties are not allowed" in result.tool_calls[2].result


def test_invalid_json_schema_is_a_load_error(tmp_path):
    from harness._errors import ScenarioError

    path = write(tmp_path, "name: s\ntools:\n  t:\n    schema: {type: 12}\n")
    with pytest.raises(ScenarioError, match=r":4: tools\.t\.schema: not a valid JSON Schema"):
        load_scenario(path)


def test_templates_render_recursively_with_args_call_and_faker(tmp_path):
    path = write(
        tmp_path,
        """\
        name: templates
        input: go
        seed: 7
        agent: {planner: react}
        tools:
          profile:
            parameters: {user: str}
            returns:
              user: "{{ args.user }}"
              call: "{{ call }}"
              name: "{{ faker.name() }}"
              fixed: 42
              tags: ["{{ args.user|upper }}", plain]
        llm:
          script:
            - tool_calls: [{profile: {user: ann}}, {profile: {user: bob}}]
            - content: done
        """,
    )
    first, second = tool_results(run_scenario(path))
    assert first["user"] == "ann" and first["call"] == "1" and first["fixed"] == 42
    assert first["tags"] == ["ANN", "plain"]
    assert second["call"] == "2"
    assert first["name"] != second["name"]  # seeded per call, not shared

    from faker import Faker

    fake = Faker("en_US")
    fake.seed_instance(seed_for(7, "profile", 1))
    assert first["name"] == fake.name()


def test_per_call_results_and_errors(tmp_path):
    path = write(
        tmp_path,
        """\
        name: per-call
        input: go
        agent: {planner: react}
        tools:
          poll:
            parameters: {job: str}
            returns: done
            results:
              - {on_call: 1, returns: queued}
              - {on_call: 2, returns: {state: running}}
            errors: [{on_call: 3, raise: lost connection}]
        llm:
          script:
            - tool_calls: [{poll: {job: a}}]
            - tool_calls: [{poll: {job: b}}]
            - tool_calls: [{poll: {job: c}}]
            - tool_calls: [{poll: {job: d}}]
            - content: done
        """,
    )
    result = run_scenario(path)
    assert tool_results(result) == [
        "queued",
        {"state": "running"},
        "ToolError: lost connection",
        "done",
    ]
    assert [r.status for r in result.tool_calls] == ["ok", "ok", "error", "ok"]
    tool_messages = [m for m in result.transcript if m.role == "tool"]
    assert tool_messages[2].is_error and tool_messages[2].content == "ToolError: lost connection"
    assert tool_messages[1].content == '{"state": "running"}'


def test_template_failure_while_rendering_ends_the_run_in_error_with_file_and_line(tmp_path):
    path = write(
        tmp_path,
        """\
        name: typo
        input: go
        tools:
          get_weather:
            parameters: {city: str}
            returns: "sunny in {{ args.city.nope.x }}"
        llm:
          script:
            - tool_calls: [{get_weather: {city: SF}}]
            - content: done
        """,
    )
    result = run_scenario(path)
    assert result.status == "error"
    assert result.termination == "error"
    message = result.final.error["message"]
    assert f"{path.as_posix()}:6: tools.get_weather.returns" in message
    assert "nope" in message


def test_latency_is_simulated_not_slept(tmp_path, no_real_sleep):
    path = write(
        tmp_path,
        """\
        name: slow
        input: go
        agent: {planner: react, max_iterations: 30}
        tools:
          slow: {parameters: {i: int}, returns: ok, latency: 30}
        llm:
          script:
            - tool_calls: [{slow: {i: 1}}, {slow: {i: 2}}]
              latency: 2
            - tool_calls: [{slow: {i: 3}}]
            - content: done
              latency: 1
        """,
    )
    result = run_scenario(path)
    assert result.sim_time == 2 + 30 + 30 + 1  # the pair costs its longest call
    assert no_real_sleep == []  # 63 simulated seconds, none slept
    pair = result.tool_calls[:2]
    assert [(r.sim_start, r.sim_end) for r in pair] == [(2.0, 32.0), (2.0, 32.0)]
    assert (result.tool_calls[2].sim_start, result.tool_calls[2].sim_end) == (32.0, 62.0)


def test_use_module_function_and_registered_tool(tmp_path, fresh_plugins):
    module = tmp_path / "my_tools_for_use_test.py"
    module.write_text(
        "def shout(text: str) -> str:\n    'Upper-case text.'\n    return text.upper()\n"
    )
    # The scenario's project registers `lookup_order` through a plugin of its own.
    (tmp_path / "my_order_plugin_for_use_test.py").write_text(
        "from harness import hookimpl, tool\n\n"
        "@tool\ndef lookup_order(order_id: str) -> dict:\n"
        "    'Status of an order by id.'\n    return {'order_id': order_id}\n\n"
        "@hookimpl\ndef harness_register_tools(register):\n    register(lookup_order)\n"
    )
    (tmp_path / "pyproject.toml").write_text(
        '[tool.harness]\nplugins = ["my_order_plugin_for_use_test"]\n'
    )
    import sys

    sys.path.insert(0, str(tmp_path))
    try:
        path = write(
            tmp_path,
            """\
            name: real
            input: go
            agent: {planner: react}
            tools:
              loud: {use: "my_tools_for_use_test:shout"}
              order: {use: lookup_order, description: Look up an order}
            llm:
              script:
                - tool_calls: [{loud: {text: hi}}, {order: {order_id: ORD-7}}]
                - content: done
            """,
        )
        scenario = load_scenario(path)
        assert build_tools(scenario)["loud"].description == "Upper-case text."
        assert build_tools(scenario)["order"].openai_schema()["function"]["name"] == "order"
        result = run_scenario(scenario)
    finally:
        sys.path.remove(str(tmp_path))
    assert result.tool_calls[0].result == "HI"
    assert result.tool_calls[1].result == {"order_id": "ORD-7"}  # the project plugin's tool


def test_use_cannot_be_combined_with_stub_keys(tmp_path):
    from harness._errors import ScenarioError

    path = write(tmp_path, "name: x\ntools:\n  t: {use: lookup_order, returns: x}\n")
    with pytest.raises(ScenarioError, match=r"remove returns"):
        load_scenario(path)


def test_faker_unique_starts_afresh_for_every_call_and_run(tmp_path):
    # faker.unique remembers what it gave; the process-wide Faker must forget it when it is
    # seeded, or the results would depend on the runs (and tests) before.
    path = write(
        tmp_path,
        """\
        name: uniq
        input: go
        seed: 1
        agent: {planner: react}
        tools:
          t:
            returns: "{{ faker.unique.random_int(1, 3) }}"
        llm:
          script:
            - tool_calls: [{t: {}}]
            - content: done
        """,
    )
    results = [run_scenario(path) for _ in range(4)]
    assert [r.status for r in results] == ["passed"] * 4
    assert len({json.dumps(tool_results(r)) for r in results}) == 1


def test_template_error_names_the_file_from_the_project_root_wherever_the_run_starts(
    tmp_path, monkeypatch
):
    project = tmp_path / "project"
    (project / "scenarios" / "deep").mkdir(parents=True)
    (project / "pyproject.toml").write_text("[project]\nname = 'p'\n")
    path = write(
        project / "scenarios" / "deep",
        """\
        name: typo
        input: go
        tools:
          get_weather:
            parameters: {city: str}
            returns:
              text: "sunny in {{ args.city.nope.x }}"
        llm:
          script:
            - tool_calls: [{get_weather: {city: SF}}]
            - content: done
        """,
    )
    outputs = []
    for cwd in (tmp_path, project, path.parent):
        monkeypatch.chdir(cwd)
        result = run_scenario(path)
        data = json.loads(result.model_dump_json())
        data.pop("wall_time")
        outputs.append(data)
    assert outputs[0] == outputs[1] == outputs[2]
    result = outputs[0]
    where = "scenarios/deep/case.scenario.yaml:7: tools.get_weather.returns.text"
    message = f"{where}: template error: 'str object' has no attribute 'nope'"
    assert result["final"]["error"]["message"] == message
    # Seen by people as the tool's result and in memory: without an internal class name.
    assert result["tool_calls"][0]["result"] == message
    assert result["memory"][-1] == {"kind": "error", "content": message}


def test_template_error_in_a_block_names_the_line_inside_it(tmp_path):
    path = write(
        tmp_path,
        """\
        name: block
        input: go
        tools:
          t:
            returns: |
              line one
              line two
              {{ call.nope.x }}
        llm:
          script:
            - tool_calls: [{t: {}}]
            - content: done
        """,
    )
    message = run_scenario(path).final.error["message"]
    assert message.startswith(f"{path.as_posix()}:8: tools.t.returns: template error: ")


def test_the_sandbox_blocks_reaching_python_internals(tmp_path):
    path = write(
        tmp_path,
        """\
        name: escape
        input: go
        tools:
          t:
            returns: "{{ args.__class__.__mro__[1].__subclasses__() }}"
        llm:
          script:
            - tool_calls: [{t: {}}]
            - content: done
        """,
    )
    result = run_scenario(path)
    assert result.status == "error"
    message = result.final.error["message"]
    assert "access to attribute '__class__' of 'dict' object is unsafe" in message
    assert "<class " not in result.model_dump_json()  # nothing of Python's classes leaked


def test_latency_and_errors_apply_to_use_tools(tmp_path, monkeypatch, no_real_sleep):
    module = tmp_path / "real_tools_for_faults_test.py"
    module.write_text(
        "import asyncio\n"
        "CALLS = []\n"
        "def lookup(key: str) -> str:\n"
        "    'Look a key up.'\n"
        "    CALLS.append(key)\n"
        "    return key.upper()\n"
        "async def alookup(key: str) -> str:\n"
        "    'Look a key up, asynchronously.'\n"
        "    CALLS.append(key)\n"
        "    return key.upper()\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    path = write(
        tmp_path,
        """\
        name: faults
        input: go
        agent: {planner: react, max_iterations: 10}
        tools:
          lookup:
            use: "real_tools_for_faults_test:lookup"
            latency: 2
            errors: [{on_call: 2, raise: backend down, type: ConnectionError}]
          alookup:
            use: "real_tools_for_faults_test:alookup"
            latency: 0.5
            errors: [{on_call: 1, raise: cold start}]
        llm:
          script:
            - tool_calls: [{lookup: {key: a}}, {lookup: {key: b}}, {lookup: {key: c}}, {alookup: {key: d}}]
            - tool_calls: [{alookup: {key: e}}]
            - content: done
        """,
    )
    import real_tools_for_faults_test as real

    result = run_scenario(path)
    assert no_real_sleep == []  # simulated, not slept
    assert [(r.name, r.status, r.result) for r in result.tool_calls] == [
        ("lookup", "ok", "A"),
        ("lookup", "error", "ConnectionError: backend down"),  # the 2nd call, in model order
        ("lookup", "ok", "C"),
        ("alookup", "error", "ToolError: cold start"),
        ("alookup", "ok", "E"),
    ]
    assert sorted(real.CALLS) == ["a", "c", "e"]  # a failing call never reaches the function
    # The parallel plan costs its longest call (2 s); then 0.5 s.
    assert result.sim_time == 2.5
    assert [(r.sim_start, r.sim_end) for r in result.tool_calls] == [
        (0.0, 2.0),
        (0.0, 2.0),
        (0.0, 2.0),
        (0.0, 0.5),
        (2.0, 2.5),
    ]
    # A second run starts counting afresh.
    real.CALLS.clear()
    again = run_scenario(path)
    assert [r.status for r in again.tool_calls] == [r.status for r in result.tool_calls]


@pytest.mark.parametrize(("parallel_tools", "threaded"), [(False, False), (True, True)])
def test_faults_on_a_sync_use_tool_keep_the_thread_the_loop_would_use(
    tmp_path, monkeypatch, parallel_tools, threaded
):
    """Adding latency must not move a sync tool off the loop's thread in a sequential plan
    (a sqlite3 connection, say, only works in the thread that made it)."""
    module = tmp_path / "thread_tools_for_faults_test.py"
    module.write_text(
        "import threading\n"
        "MAIN = threading.main_thread()\n"
        "def where(key: str) -> str:\n"
        "    'Which thread runs the tool.'\n"
        "    return 'main' if threading.current_thread() is MAIN else 'worker'\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    path = write(
        tmp_path,
        f"""\
        name: threads
        input: go
        agent: {{planner: react, parallel_tools: {str(parallel_tools).lower()}}}
        tools:
          where: {{use: "thread_tools_for_faults_test:where", latency: 0.5}}
        llm:
          script:
            - tool_calls: [{{where: {{key: a}}}}, {{where: {{key: b}}}}]
            - content: done
        """,
    )
    result = run_scenario(path)
    expected = "worker" if threaded else "main"
    assert [r.result for r in result.tool_calls] == [expected, expected]


def test_a_timeout_fails_a_slow_call_when_the_timeout_runs_out(tmp_path, no_real_sleep):
    path = write(
        tmp_path,
        """\
        name: timeouts
        input: go
        agent: {planner: react}
        tools:
          slow:
            parameters: {i: int}
            returns: done
            latency: 30
            timeout: 5
          quick:
            parameters: {i: int}
            returns: done
            latency: 2
            timeout: 5
        llm:
          script:
            - tool_calls: [{slow: {i: 1}}, {quick: {i: 2}}]
            - content: one timed out
        """,
    )
    result = run_scenario(path)
    slow, quick = result.tool_calls
    assert (slow.status, slow.result) == (
        "error",
        "TimeoutError: no answer within the tool's timeout of 5 s (it would take 30 s)",
    )
    # It fails at its timeout, on the simulated clock: the plan costs 5 s, not 30.
    assert [(slow.sim_start, slow.sim_end), (quick.sim_start, quick.sim_end)] == [(0, 5), (0, 2)]
    assert quick.status == "ok" and result.sim_time == 5
    assert no_real_sleep == []


def test_an_error_without_on_call_fails_every_call_another_entry_does_not_name(tmp_path):
    path = write(
        tmp_path,
        """\
        name: down
        input: go
        agent: {planner: react, stagnation: {window: 0}}
        tools:
          fetch:
            parameters: {i: int}
            returns: page
            errors:
              - {raise: Service unavailable, type: ConnectionError}
              - {on_call: 2, raise: Rate limited}
        llm:
          script:
            - tool_calls: [{fetch: {i: 1}}]
            - tool_calls: [{fetch: {i: 2}}]
            - tool_calls: [{fetch: {i: 3}}]
            - content: gave up
        """,
    )
    result = run_scenario(path)
    assert [r.result for r in result.tool_calls] == [
        "ConnectionError: Service unavailable",
        "ToolError: Rate limited",
        "ConnectionError: Service unavailable",
    ]


def test_two_errors_for_every_call_are_refused(tmp_path):
    path = write(
        tmp_path,
        """\
        name: twice
        input: go
        tools:
          fetch:
            errors: [{raise: a}, {raise: b}]
        """,
    )
    with pytest.raises(ScenarioError, match="every call already has an error"):
        load_scenario(path)


def test_a_call_to_an_ends_run_tool_ends_the_run_with_its_arguments_as_the_output(tmp_path):
    # An output tool (pydantic-ai's final_result): the run ends once its call has run,
    # completed, with no further request; a call of the same plan before it still runs.
    path = write(
        tmp_path,
        """\
        name: output-tool
        input: Paris as a record?
        agent: {planner: react}
        tools:
          get_weather: {parameters: {city: str}, returns: "18C"}
          final_result: {parameters: {city: str, temperature: str}, ends_run: true}
        llm:
          script:
            - tool_calls: [{get_weather: {city: Paris}}]
            - tool_calls: [{get_weather: {city: Rome}}, {final_result: {city: Paris, temperature: 18C}}]
            - content: never asked for
        expect:
          termination: completed
          final: {data: {output_tool: final_result, output: {city: Paris, temperature: 18C}}}
        """,
    )
    result = run_scenario(path)
    assert result.status == "passed", [e for e in result.expectations if not e.ok]
    assert result.llm_calls == 2
    assert [(c.name, c.status) for c in result.tool_calls] == [
        ("get_weather", "ok"),
        ("get_weather", "ok"),
        ("final_result", "ok"),
    ]
    assert result.final.content is None


def test_an_ends_run_call_with_invalid_arguments_does_not_end_the_run(tmp_path):
    path = write(
        tmp_path,
        """\
        name: output-tool-retry
        input: Paris as a record?
        agent: {planner: react, on_validation_error: retry}
        tools:
          final_result: {parameters: {city: str}, ends_run: true}
        llm:
          script:
            - tool_calls: [{final_result: {town: Paris}}]
            - tool_calls: [{final_result: {city: Paris}}]
        """,
    )
    result = run_scenario(path)
    assert result.termination == "completed" and result.llm_calls == 2
    assert [c.status for c in result.tool_calls] == ["invalid", "ok"]
    assert result.final.data == {"output_tool": "final_result", "output": {"city": "Paris"}}
