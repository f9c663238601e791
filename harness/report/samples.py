"""Sample results made by real agent runs: for the report's docs, benchmarks and tests.

Every sample runs a real ``Agent`` on a ``ScriptedLLM`` with real tools, so the
report is exercised on exactly what the loop produces (events, records on the
simulated clock, transcripts), never on hand-written dictionaries.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from harness.actions import RunResult
from harness.agent import Agent
from harness.hookspecs import hookimpl
from harness.results import ExpectationResult, Results, ScenarioResult, Status, build_results
from harness.simclock import sleep
from harness.tools import tool

__all__ = [
    "HOSTILE",
    "MARKUP",
    "hostile_scenario",
    "long_scenario",
    "sample_baseline",
    "sample_results",
    "sample_scenarios",
    "scenario_result",
]

# Text that would run script if it were ever inserted into the page as HTML, evaluated as
# a template, or turned into a link.
HOSTILE = {
    "img": "<img src=x onerror=\"window.__pwned=1;document.title='PWNED'\">",
    "script": "</script><script>window.__pwned=2;document.title='PWNED'</script>",
    "attr": '" autofocus onfocus="window.__pwned=3',
    "svg": '<svg onload="window.__pwned=4"></svg>',
    "anchor": '<a href="javascript:window.__pwned=5">click</a>',
    # Template injection: shown as written, never "sum=49" or "loop1".
    "template": "sum={{ 7*7 }} {% for x in [1] %}loop{{ x }}{% endfor %}",
    # javascript: URLs as markdown-ish links and bare text: never an href.
    "md_link": "[click me](javascript:window.__pwned=6)",
    "js_url": "javascript:window.__pwned=7//",
}
# The payloads that escaping changes (the others read the same escaped or not).
MARKUP = ("img", "script", "attr", "svg", "anchor")

STARTED = datetime(2025, 1, 1, 12, 0, tzinfo=UTC)


# -- tools -----------------------------------------------------------------------------


@tool
async def get_weather(city: str) -> str:
    """Current weather for a city."""
    sleep(0.5 if city == "San Francisco" else 0.35)
    return f"72F, sunny in {city}"


@tool
async def find_restaurants(location: str, limit: int = 3) -> list[str]:
    """Restaurants near a location."""
    sleep(0.8)
    return ["Zuni Cafe", "Tartine Manufactory", "Nopa"][:limit]


@tool
async def search_docs(query: str) -> dict[str, Any]:
    """Search the documentation."""
    sleep(0.25)
    return {"query": query, "hits": 0}


@tool
def lookup_order(order_id: str) -> dict[str, Any]:
    """An order's status."""
    sleep(0.3)
    if order_id.startswith("X"):
        raise RuntimeError(f"order service unavailable for {order_id}")
    return {"order_id": order_id, "status": "shipped", "eta_days": 2}


@tool
def echo(text: str) -> str:
    """Return the text as given (used to carry hostile text through a tool result)."""
    sleep(0.1)
    return text


TOOLS = [get_weather, find_restaurants, search_docs, lookup_order, echo]


class _ExplodingObserver:
    """An observer plugin with a bug: the run ends in ``error``."""

    @hookimpl
    def harness_action_executed(self, run: Any, action: Any, result: Any) -> None:
        raise KeyError("observer expected a 'trace_id' in the tool result")


# -- building results -------------------------------------------------------------------


def scenario_result(
    run: RunResult,
    name: str,
    *,
    expect: dict[str, Any] | None = None,
    description: str | None = None,
    tags: list[str] | None = None,
    planner: str = "agentbuilder",
    stagnation_window: int | None = 3,
    folder: str = "scenarios",
) -> ScenarioResult:
    """A ScenarioResult for ``run``, with expectations checked the simple way the runner does."""
    expect = {"termination": "completed", **(expect or {})}
    actual_of = {
        "termination": run.termination.value,
        "iterations": run.iterations,
        "llm_calls": run.llm_calls,
        "tool_calls.sequence": [r.name for r in run.tool_calls if r.status != "not_run"],
        "final.contains": run.final.content,
        "parallel_groups": run.parallel_groups,
    }
    checks = []
    for path, expected in expect.items():
        actual = actual_of[path]
        if path == "final.contains":
            ok = isinstance(actual, str) and expected in actual
        else:
            ok = actual == expected
        checks.append(ExpectationResult(path=path, expected=expected, actual=actual, ok=ok))
    status: Status
    if run.termination.value == "error":
        status = "error"
    else:
        status = "passed" if all(c.ok for c in checks) else "failed"
    file = f"{folder}/{name}.scenario.yaml"
    return ScenarioResult.from_run(
        run,
        id=f"{file}::{name}",
        name=name,
        file=file,
        expectations=checks,
        status=status,
        description=description,
        tags=tags or [],
        planner=planner,
        stagnation_window=stagnation_window,
    )


def _agent(script: list[dict[str, Any]], **options: Any) -> Agent:
    options.setdefault("system", "You are a helpful assistant. Use tools when they help.")
    return Agent(llm=script, tools=TOOLS, **options)


def hostile_scenario(name: str = "hostile-text", *, before: bool = False) -> ScenarioResult:
    """Hostile text in the model's output, tool arguments and results, the scenario name,
    description and tags. ``before``: the run as a baseline saw it (one call fewer and
    another final answer), so the baseline diff carries hostile text too."""
    words = f"{HOSTILE['template']} {HOSTILE['md_link']} {HOSTILE['js_url']}"
    calls = [
        {"echo": {"text": f"{words} {HOSTILE['anchor']}"}},
        {"echo": {"text": HOSTILE["script"]}},
        {"echo": {"text": HOSTILE["img"]}},
    ]
    final = "Done " + " ".join(HOSTILE.values())
    if before:
        calls = calls[:2]
        final = f"Earlier {HOSTILE['img']} {words} {HOSTILE['anchor']} done"
    script = [
        {"content": f"Let me echo that: {HOSTILE['img']} {words}", "tool_calls": calls},
        {"content": final},
    ]
    run = _agent(script, planner="react").run(f"Repeat this back: {HOSTILE['svg']} {words}")
    return scenario_result(
        run,
        f"{name} {HOSTILE['img']} {HOSTILE['template']} {HOSTILE['md_link']}",
        expect={"final.contains": HOSTILE["img"]},
        description=(
            f"Untrusted text everywhere {HOSTILE['script']} {HOSTILE['attr']} "
            f"{HOSTILE['anchor']} {words}"
        ),
        tags=["security", HOSTILE["img"], HOSTILE["template"], HOSTILE["js_url"]],
        planner="react",
    )


def long_scenario(index: int, iterations: int = 20) -> ScenarioResult:
    """A react run of ``iterations`` rounds (two parallel calls each) with long texts."""
    rounds = iterations - 1
    script: list[dict[str, Any]] = [
        {
            "content": f"Round {i}: checking two sources. " + "Reasoning text. " * 20,
            "tool_calls": [
                {"get_weather": {"city": f"City {index}-{i}"}},
                {"search_docs": {"query": f"topic {i} " + "x" * 300}},
            ],
            "latency": 0.4,
            "usage": {"prompt_tokens": 200 + i, "completion_tokens": 30},
        }
        for i in range(rounds)
    ]
    script.append({"content": "Summary. " + "Long final answer text. " * 200, "latency": 0.6})
    run = _agent(script, planner="react", max_iterations=iterations + 5).run(
        f"Scenario {index}: research twenty things."
    )
    status_kind = index % 10
    expect: dict[str, Any] = {"iterations": iterations}
    if status_kind == 7:
        expect["iterations"] = iterations - 2  # some fail, so filters have work to do
    return scenario_result(
        run,
        f"bulk-{index:04d}",
        expect=expect,
        description="A long generated run for the rendering benchmark.",
        tags=["bulk"],
        planner="react",
        folder="scenarios/bulk",
    )


def _weather_and_restaurants() -> ScenarioResult:
    script = [
        {
            "content": "I need to check the weather first.",
            "tool_calls": [{"get_weather": {"city": "San Francisco"}}],
            "latency": 0.6,
            "usage": {"prompt_tokens": 120, "completion_tokens": 18},
        },
        {
            "tool_calls": [
                {"find_restaurants": {"location": "San Francisco"}},
                {"get_weather": {"city": "Oakland"}},
            ],
            "latency": 0.7,
            "usage": {"prompt_tokens": 190, "completion_tokens": 31},
        },
        {
            "content": "It is 72F and sunny in San Francisco; try Zuni Cafe, Tartine or Nopa.",
            "latency": 0.9,
            "usage": {"prompt_tokens": 260, "completion_tokens": 24},
        },
    ]
    run = _agent(script, planner="react", max_iterations=10).run(
        "What's the weather in San Francisco and what restaurants are nearby?"
    )
    return scenario_result(
        run,
        "weather-and-restaurants",
        expect={
            "iterations": 3,
            "llm_calls": 3,
            "parallel_groups": [["find_restaurants", "get_weather"]],
            "final.contains": "sunny",
        },
        description="Two tool rounds, the second one parallel, then a synthesized answer.",
        tags=["smoke", "parallel"],
        planner="react",
    )


def _round_trip() -> ScenarioResult:
    script = [
        {"tool_calls": [{"lookup_order": {"order_id": "A-1001"}}], "latency": 0.4},
        {"content": "Order A-1001 has shipped and arrives in 2 days.", "latency": 0.5},
    ]
    run = _agent(script).run("Where is my order A-1001?")
    return scenario_result(
        run,
        "order-status-round-trip",
        expect={"iterations": 4, "llm_calls": 2, "final.contains": "shipped"},
        description="agentbuilder: request, tools, request, complete.",
        tags=["smoke"],
    )


def _tool_failure() -> ScenarioResult:
    script = [
        {
            "tool_calls": [
                {"lookup_order": {"order_id": "X-9"}},
                {"lookup_order": {"order_id": "A-7"}},
            ],
            "latency": 0.5,
        },
        {"content": "Order A-7 shipped; X-9 could not be looked up right now.", "latency": 0.4},
    ]
    run = _agent(script).run("Status of orders X-9 and A-7?")
    return scenario_result(
        run,
        "tool-failure-is-reported",
        expect={"final.contains": "could not be looked up"},
        description="One of two parallel calls raises; the model sees the error and recovers.",
        tags=["faults", "parallel"],
    )


def _stagnation() -> ScenarioResult:
    script = [
        {
            "content": "Searching.",
            "tool_calls": [{"search_docs": {"query": "refund policy"}}],
            "latency": 0.3,
            "repeat": 5,
        },
        {"content": "I could not find it."},
    ]
    run = _agent(script, planner="react", stagnation_window=3).run("What is the refund policy?")
    return scenario_result(
        run,
        "stagnation-same-search",
        expect={"termination": "stagnation", "llm_calls": 4},
        description="The model repeats one search; the fourth identical plan is stopped.",
        tags=["edge"],
        planner="react",
        stagnation_window=3,
    )


def _max_iterations() -> ScenarioResult:
    script = [
        {
            "tool_calls": [{"search_docs": {"query": f"attempt {i}"}}],
            "latency": 0.2,
        }
        for i in range(10)
    ]
    run = _agent(script, planner="react", max_iterations=6).run("Find the changelog entry.")
    return scenario_result(
        run,
        "max-iterations-wandering",
        expect={"termination": "completed"},
        description="Different searches every round: no stagnation, but the limit is reached.",
        tags=["edge"],
        planner="react",
    )


def _validation_error() -> ScenarioResult:
    script = [
        {
            "tool_calls": [
                {"get_weather": {"city": "Paris"}},
                {"name": "find_restaurants", "raw_arguments": '{"location": '},
            ],
            "latency": 0.3,
        },
        {"content": "unused"},
    ]
    run = _agent(script).run("Weather and food in Paris?")
    return scenario_result(
        run,
        "malformed-arguments",
        expect={"termination": "validation_error"},
        description="Malformed JSON arguments stop the run before any call of the plan runs.",
        tags=["faults"],
    )


def _llm_error() -> ScenarioResult:
    script = [
        {"tool_calls": [{"get_weather": {"city": "Berlin"}}], "latency": 0.4},
        {"error": {"status": 429, "message": "Rate limit reached for gpt-4o-mini"}},
    ]
    run = _agent(script).run("Weather in Berlin?")
    return scenario_result(
        run,
        "rate-limited",
        expect={"termination": "llm_error"},
        description="The second LLM call answers HTTP 429.",
        tags=["faults"],
    )


def _observer_error() -> ScenarioResult:
    script = [
        {"tool_calls": [{"get_weather": {"city": "Lisbon"}}], "latency": 0.2},
        {"content": "Sunny in Lisbon."},
    ]
    run = _agent(script, plugins=[_ExplodingObserver()]).run("Weather in Lisbon?")
    return scenario_result(
        run,
        "observer-plugin-crash",
        description="A buggy observer plugin raises: the run ends in error (a harness-side bug).",
        tags=["faults"],
    )


def _unknown_tool() -> ScenarioResult:
    script = [
        {"tool_calls": [{"get_wether": {"city": "Rome"}}], "latency": 0.3},
        {"tool_calls": [{"get_weather": {"city": "Rome"}}], "latency": 0.3},
        {"content": "It is 72F and sunny in Rome."},
    ]
    run = _agent(script).run("Weather in Rome?")
    return scenario_result(
        run,
        "hallucinated-tool-name",
        expect={"final.contains": "Rome", "llm_calls": 2},
        description="The model misspells a tool, reads the error, and corrects itself.",
        tags=["faults"],
    )


def _empty() -> ScenarioResult:
    # No system prompt and no input: the planner has nothing to do.
    run = Agent(llm=[{"content": "unused"}], tools=TOOLS).run()
    return scenario_result(
        run,
        "nothing-to-do",
        expect={"termination": "empty"},
        description="An empty conversation: the planner returns an empty action.",
        tags=["edge"],
    )


SAMPLES: list[Callable[[], ScenarioResult]] = [
    _weather_and_restaurants,
    _round_trip,
    _tool_failure,
    _stagnation,
    _max_iterations,
    _validation_error,
    _llm_error,
    _observer_error,
    _unknown_tool,
    _empty,
    hostile_scenario,
]


# -- a baseline that differs from the samples in every diff category ---------------------


def _weather_sequential_before() -> ScenarioResult:
    # The baseline's model asked for the two lookups in separate rounds.
    script = [
        {"tool_calls": [{"get_weather": {"city": "San Francisco"}}], "latency": 0.6},
        {"tool_calls": [{"find_restaurants": {"location": "San Francisco"}}], "latency": 0.7},
        {"tool_calls": [{"get_weather": {"city": "Oakland"}}], "latency": 0.5},
        {"content": "72F and sunny; Zuni Cafe, Tartine and Nopa are close by.", "latency": 0.9},
    ]
    run = _agent(script, planner="react", max_iterations=10).run(
        "What's the weather in San Francisco and what restaurants are nearby?"
    )
    return scenario_result(
        run,
        "weather-and-restaurants",
        expect={"final.contains": "sunny"},
        description="Two tool rounds, the second one parallel, then a synthesized answer.",
        tags=["smoke", "parallel"],
        planner="react",
    )


def _unknown_tool_before() -> ScenarioResult:
    script = [
        {"tool_calls": [{"get_weather": {"city": "Rome"}}], "latency": 0.3},
        {"content": "It is 72F and sunny in Rome."},
    ]
    run = _agent(script).run("Weather in Rome?")
    return scenario_result(
        run,
        "hallucinated-tool-name",
        expect={"final.contains": "Rome", "llm_calls": 2},
        description="The model misspells a tool, reads the error, and corrects itself.",
        tags=["faults"],
    )


def _rate_limited_before() -> ScenarioResult:
    script = [
        {"tool_calls": [{"get_weather": {"city": "Berlin"}}], "latency": 0.4},
        {"content": "It is 72F in Berlin."},
    ]
    run = _agent(script).run("Weather in Berlin?")
    return scenario_result(
        run,
        "rate-limited",
        expect={"termination": "llm_error"},
        description="The second LLM call answers HTTP 429.",
        tags=["faults"],
    )


def _removed_before() -> ScenarioResult:
    run = _agent([{"content": "Hello! How can I help?"}]).run("Hi")
    return scenario_result(run, "greeting", description="Says hello.", tags=["smoke"])


BASELINE_SAMPLES: list[Callable[[], ScenarioResult]] = [
    _weather_sequential_before,  # changed: trajectory, iterations, LLM calls, final answer
    _round_trip,
    _tool_failure,
    _stagnation,
    _max_iterations,
    _validation_error,
    _rate_limited_before,  # fixed: failed before, passes now
    _observer_error,
    _unknown_tool_before,  # regression: passed before, fails now
    _removed_before,  # removed; _empty is added
]


def sample_baseline(*, hostile: bool = True) -> Results:
    """A baseline for ``sample_results()`` with an entry in every diff category; with
    ``hostile``, the hostile scenario is a change (trajectory and final answer)."""
    started = datetime(2024, 12, 20, 9, 30, tzinfo=UTC)
    scenarios = [make() for make in BASELINE_SAMPLES]
    if hostile:
        scenarios.append(hostile_scenario(before=True))
    return build_results(scenarios, started=started)


def sample_scenarios(*, hostile: bool = True) -> list[ScenarioResult]:
    """One scenario per termination and common fault, plus one full of hostile text."""
    return [make() for make in SAMPLES if hostile or make is not hostile_scenario]


def sample_results(scenarios: list[ScenarioResult] | None = None) -> Results:
    """Results for the samples (or the given scenarios) with a fixed start time."""
    return build_results(sample_scenarios() if scenarios is None else scenarios, started=STARTED)
