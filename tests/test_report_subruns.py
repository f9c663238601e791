"""Sub-agents' runs in the report: a nested timeline under the tool call, collapsed until
opened, in a real browser (Debian's chromium, as tests/test_report_browser.py)."""

from __future__ import annotations

import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from chromium import open_browser
from test_scenario_agents import NESTED

from harness._results import build_results
from harness.report import write_html
from harness.scenario import run_scenario

REPO = Path(__file__).resolve().parent.parent


# A sub-agent that asks for page after page: its timeline folds alike iterations.
LONG = """\
name: long-sub-run
input: Read everything.
tools:
  reader: {agent: reader}
agents:
  reader:
    agent: {max_iterations: 20, stagnation: {window: 0}}
    tools:
      fetch: {parameters: {page: int}, returns: "page {{ args.page }}"}
    llm:
      script:
        - tool_calls: [{fetch: {page: 1}}]
          repeat: 9
        - content: Read it all.
llm:
  script:
    - tool_calls: [{reader: {task: Read every page.}}]
    - content: Done.
"""


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("subruns")
    nested = folder / "nested.scenario.yaml"
    nested.write_text(textwrap.dedent(NESTED), encoding="utf-8")
    long = folder / "long.scenario.yaml"
    long.write_text(LONG, encoding="utf-8")
    results = build_results(
        [
            run_scenario(REPO / "scenarios/agents/coordinator.scenario.yaml"),
            run_scenario(nested),
            run_scenario(long),
        ]
    )
    return write_html(folder / "report.html", results)


@pytest.fixture(scope="module")
def browser(report: Path) -> Iterator[Any]:
    with open_browser() as browser:
        yield browser


@pytest.fixture
def page(report: Path, browser: Any) -> Iterator[Any]:
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    page = context.new_page()
    page.problems = []  # type: ignore[attr-defined]
    page.on("console", lambda msg: msg.type == "error" and page.problems.append(msg.text))
    page.on("pageerror", lambda exc: page.problems.append(str(exc)))
    page.goto(report.as_uri(), wait_until="load")
    try:
        yield page
    finally:
        context.close()


def _card(page: Any, name: str) -> Any:
    card = page.locator("#scenarios > details.scenario", has_text=name).first
    card.locator(":scope > summary").click()
    return card


def test_sub_runs_are_nested_timelines_collapsed_until_opened(page: Any) -> None:
    card = _card(page, "coordinator-with-two-sub-agents")
    subruns = card.locator("details.subrun")
    assert subruns.count() == 2
    researcher, fetcher = subruns.nth(0), subruns.nth(1)
    # Collapsed: the summary says how each sub-run ended, its timeline is hidden.
    assert researcher.locator(":scope > summary").inner_text() == (
        "sub-run of researcher completed 4 it · 2 LLM · 1 tool · 0.70 s"
    )
    assert "max_iterations" in fetcher.locator(":scope > summary").inner_text()
    nested = researcher.locator(":scope > table.timeline")
    assert not nested.is_visible()
    researcher.locator(":scope > summary").click()
    assert nested.is_visible()
    # The sub-run's own LLM calls and tool calls, with its answer.
    text = nested.inner_text()
    assert "search_notes" in text and "notes on Rhine" in text
    assert "The Rhine runs 1,230 km from the Alps to the North Sea." in text
    assert "Completed with a final response" in text
    # The other sub-run stays closed.
    assert not fetcher.locator(":scope > table.timeline").is_visible()
    fetcher.locator(":scope > summary").click()
    assert "Max iterations reached (4)" in fetcher.inner_text()
    assert page.problems == []


def test_a_sub_run_of_a_sub_run_nests_again(page: Any) -> None:
    card = _card(page, "nested")
    outer = card.locator("details.subrun").first
    inner = outer.locator("details.subrun")
    assert inner.count() == 1
    assert not inner.is_visible()
    outer.locator(":scope > summary").click()
    assert inner.is_visible() and not inner.locator("table.timeline").is_visible()
    assert "max_iterations" in inner.locator(":scope > summary").inner_text()
    inner.locator(":scope > summary").click()
    assert "cold in Oslo" in inner.locator("table.timeline").inner_text()
    assert page.problems == []


def test_a_long_sub_run_folds_alike_iterations_in_its_own_timeline(page: Any) -> None:
    card = _card(page, "long-sub-run")
    sub = card.locator("details.subrun").first
    sub.locator(":scope > summary").click()
    nested = sub.locator(":scope > table.timeline")
    button = nested.locator(":scope > tbody.fold button.unfold")
    assert button.count() == 1
    hidden = nested.locator(":scope > tbody.folded")
    assert hidden.count() > 0 and not hidden.first.is_visible()
    button.click()
    assert nested.locator(":scope > tbody.folded").count() == 0
    assert page.problems == []
