"""The report's sample results: scenario files run by the real runner.

Used by the report's tests, the render benchmark (benchmarks/report_render.py) and the
docs' screenshots (docs/make_screenshots.py), so that the report is exercised on exactly
what the runner produces (events, records on the simulated clock, transcripts, checked
expectations), never on hand-written dictionaries.

- ``tests/fixtures/report/now``: one scenario per termination and common fault;
- ``tests/fixtures/report/baseline``: the same ids as a baseline ran them, where they
  differ (with ``now``, an entry in every category of the baseline diff);
- generated here: a scenario full of hostile text (``HOSTILE``), long runs for the
  benchmark, and small scripted runs for the tests (``run_script``).

Each folder is a project of its own (a pyproject.toml): ids are relative to it, and no
plugin of this repository applies.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from harness import hookimpl
from harness._results import Results, ScenarioResult, build_results
from harness.scenario import run_scenario
from harness.scenario._loader import load_scenario_text

__all__ = [
    "HOSTILE",
    "MARKUP",
    "hostile_scenario",
    "long_scenario",
    "run_script",
    "run_text",
    "sample_baseline",
    "sample_results",
    "sample_scenarios",
    "scenario_text",
]

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "report"
NOW = FIXTURES / "now"
BEFORE = FIXTURES / "baseline"

STARTED = datetime(2025, 1, 1, 12, 0, tzinfo=UTC)
BASELINE_STARTED = datetime(2024, 12, 20, 9, 30, tzinfo=UTC)

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

SYSTEM = "You are a helpful assistant. Use tools when they help."

# Stub tools for the generated scenarios (the fixture files define their own alike).
TOOLS: dict[str, dict[str, Any]] = {
    "get_weather": {
        "description": "Current weather for a city.",
        "parameters": {"city": "str"},
        "returns": "72F, sunny in {{ args.city }}",
        "latency": 0.35,
    },
    "find_restaurants": {
        "description": "Restaurants near a location.",
        "parameters": {"location": "str", "limit": {"type": "int", "default": 3}},
        "returns": ["Zuni Cafe", "Tartine Manufactory", "Nopa"],
        "latency": 0.8,
    },
    "search_docs": {
        "description": "Search the documentation.",
        "parameters": {"query": "str"},
        "returns": {"query": "{{ args.query }}", "hits": 0},
        "latency": 0.25,
    },
    "lookup_order": {
        "description": "An order's status.",
        "parameters": {"order_id": "str"},
        "returns": {"order_id": "{{ args.order_id }}", "status": "shipped", "eta_days": 2},
        "latency": 0.3,
    },
    "echo": {
        "description": "Return the text as given.",
        "parameters": {"text": "str"},
        "returns": "{{ args.text }}",
        "latency": 0.1,
    },
}


class ExplodingObserver:
    """An observer plugin with a bug: the run ends in ``error``."""

    @hookimpl
    def harness_action_executed(self, run: Any, action: Any, result: Any) -> None:
        """Raise: the bug."""
        raise KeyError("observer expected a 'trace_id' in the tool result")


# The samples in ``now``, in this order; the observer's scenario runs with the buggy
# observer (a plugin of that run only).
SAMPLES = (
    "weather-and-restaurants",
    "order-status-round-trip",
    "tool-failure-is-reported",
    "stagnation-same-search",
    "max-iterations-wandering",
    "malformed-arguments",
    "rate-limited",
    "observer-plugin-crash",
    "hallucinated-tool-name",
    "nothing-to-do",
)
# What the baseline ran: its own version where ``baseline`` has one, else ``now``'s.
# Changed: weather-and-restaurants (trajectory, iterations, LLM calls, final answer);
# fixed: rate-limited; regression: hallucinated-tool-name; removed: greeting (and
# nothing-to-do is added).
BASELINE_SAMPLES = (*(name for name in SAMPLES if name != "nothing-to-do"), "greeting")


def _run_file(name: str, project: Path) -> ScenarioResult:
    plugins = [ExplodingObserver()] if name == "observer-plugin-crash" else []
    return run_scenario(project / "scenarios" / f"{name}.scenario.yaml", plugins=plugins)


def run_text(text: str, path: Path) -> ScenarioResult:
    """Run scenario ``text`` as if it were the file ``path``."""
    return run_scenario(load_scenario_text(text, path))


def scenario_text(
    name: str,
    script: list[dict[str, Any]],
    *,
    tools: dict[str, dict[str, Any]] | None = None,
    **top: Any,
) -> str:
    """A scenario file's text: ``name``, ``top``-level keys, the tools and the script."""
    data = {"name": name, **top, "tools": TOOLS if tools is None else tools}
    data["llm"] = {"script": script}
    # JSON is YAML, and many times faster to write than yaml.safe_dump's output (the
    # render benchmark makes 1,000 long scenarios).
    return json.dumps(data, ensure_ascii=False, indent=1)


def run_script(
    script: list[dict[str, Any]],
    name: str = "t",
    *,
    tools: dict[str, dict[str, Any]] | None = None,
    prompt: str = "Go.",
    history: list[dict[str, Any]] | None = None,
    **agent: Any,
) -> ScenarioResult:
    """A scripted run of the stub ``TOOLS`` as the file ``scenarios/NAME.scenario.yaml`` of
    a project; ``tools`` changes some of their keys, ``agent`` is the file's agent section."""
    changed = tools or {}
    stubs = {name: {**spec, **changed.get(name, {})} for name, spec in TOOLS.items()}
    top: dict[str, Any] = {"agent": agent} if agent else {}
    if history is not None:
        top["history"] = history
    text = scenario_text(name, script, tools=stubs, **top, input=prompt)
    return run_text(text, NOW / "scenarios" / f"{name}.scenario.yaml")


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
    text = scenario_text(
        f"{name} {HOSTILE['img']} {HOSTILE['template']} {HOSTILE['md_link']}",
        script,
        tools={"echo": TOOLS["echo"]},
        description=(
            f"Untrusted text everywhere {HOSTILE['script']} {HOSTILE['attr']} "
            f"{HOSTILE['anchor']} {words}"
        ),
        agent={"planner": "react", "system": SYSTEM},
        input=f"Repeat this back: {HOSTILE['svg']} {words}",
        expect={"termination": "completed", "final": {"contains": HOSTILE["img"]}},
    )
    project = BEFORE if before else NOW
    result = run_text(text, project / "scenarios" / f"{name}.scenario.yaml")
    # Tags no scenario file may have (a tag must be a name pytest's -m can select): the
    # report must still show them as text.
    tags = ["security", HOSTILE["img"], HOSTILE["template"], HOSTILE["js_url"]]
    return result.model_copy(update={"tags": tags})


def long_scenario(index: int, iterations: int = 20) -> ScenarioResult:
    """A react run of ``iterations`` rounds (two parallel calls each) with long texts."""
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
        for i in range(iterations - 1)
    ]
    script.append({"content": "Summary. " + "Long final answer text. " * 200, "latency": 0.6})
    # Every tenth fails, so that the report's filters have work to do.
    expected = iterations - 2 if index % 10 == 7 else iterations
    name = f"bulk-{index:04d}"
    text = scenario_text(
        name,
        script,
        tools={k: TOOLS[k] for k in ("get_weather", "search_docs")},
        description="A long generated run for the rendering benchmark.",
        tags=["bulk"],
        agent={"planner": "react", "max_iterations": iterations + 5, "system": SYSTEM},
        input=f"Scenario {index}: research twenty things.",
        expect={"termination": "completed", "iterations": expected},
    )
    return run_text(text, NOW / "scenarios" / "bulk" / f"{name}.scenario.yaml")


def sample_scenarios(*, hostile: bool = True) -> list[ScenarioResult]:
    """One scenario per termination and common fault, plus one full of hostile text."""
    scenarios = [_run_file(name, NOW) for name in SAMPLES]
    return [*scenarios, hostile_scenario()] if hostile else scenarios


def sample_baseline(*, hostile: bool = True) -> Results:
    """A baseline for ``sample_results()`` with an entry in every diff category; with
    ``hostile``, the hostile scenario is a change (trajectory and final answer)."""
    mine = {p.name.removesuffix(".scenario.yaml") for p in (BEFORE / "scenarios").iterdir()}
    scenarios = [_run_file(name, BEFORE if name in mine else NOW) for name in BASELINE_SAMPLES]
    if hostile:
        scenarios.append(hostile_scenario(before=True))
    return build_results(scenarios, started=BASELINE_STARTED)


def sample_results(scenarios: list[ScenarioResult] | None = None) -> Results:
    """Results for the samples (or the given scenarios) with a fixed start time, their
    scenarios in a list (tests edit them)."""
    given = sample_scenarios() if scenarios is None else scenarios
    return build_results(given, started=STARTED, in_memory=True)
