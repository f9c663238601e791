"""The report's timeline, matrix and pills as a reader sees them, in Debian's headless
chromium: the names of parallel calls sit beside their own lanes without overlapping, every
row's clock track shares one time axis, matrix columns follow their values (3 before 10),
a judge's cost has a pill of its own, and an external target's timeline is on the wall
clock, said so, where an own-loop run's stays on the simulated clock. Measured in the page's DOM, not compared as
pixels."""

from __future__ import annotations

import itertools
import logging
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
from chromium import open_browser

from harness._results import build_results
from harness.report import render_html, write_html

ROOT = Path(__file__).resolve().parents[1]
# An external target (the raw openai SDK): one call, then two in parallel, then the answer.
TARGET = ROOT / "scenarios" / "external" / "raw-sync.scenario.yaml"

PARALLEL = """\
name: parallel
input: Plan an evening in SF.
agent: {planner: react}
tools:
  get_weather: {parameters: {city: str}, returns: sunny, latency: 0.5}
  find_restaurants_with_a_long_name: {parameters: {city: str}, returns: [Zuni], latency: 1.5}
  get_time: {parameters: {city: str}, returns: "19:00", latency: 0.25}
llm:
  script:
    - tool_calls:
        - {get_weather: {city: SF}}
        - {find_restaurants_with_a_long_name: {city: SF}}
        - {get_time: {city: SF}}
      latency: 1.0
    - content: Sunny; Zuni at 19:00.
      latency: 1.0
"""

JUDGED = """\
name: judged
input: Weather in SF?
llm:
  script:
    - content: Sunny in SF.
      usage: {prompt_tokens: 10, completion_tokens: 5, total_tokens: 15}
  judge_script:
    - content: '{"pass": true, "score": 1, "reason": "It answers."}'
      usage: {prompt_tokens: 100, completion_tokens: 20, total_tokens: 120}
expect:
  final: {judge: It says the weather.}
"""

MATRIX = """\
name: limits
matrix:
  max_iterations: [3, 10, 20]
input: hi
llm:
  script:
    - content: done
"""


def _results(folder: Path) -> Any:
    from harness.scenario import expand_matrix, load_scenario, run_scenario

    (folder / "pyproject.toml").write_text("", encoding="utf-8")
    (folder / "scenarios").mkdir()
    paths = []
    for name, text in (("parallel", PARALLEL), ("judged", JUDGED), ("limits", MATRIX)):
        path = folder / "scenarios" / f"{name}.scenario.yaml"
        path.write_text(text, encoding="utf-8")
        paths.append(path)
    runs = [run_scenario(paths[0]), run_scenario(paths[1])]
    runs += [run_scenario(v) for v in expand_matrix(load_scenario(paths[2]))]
    with pytest.MonkeyPatch.context() as patch:
        # The example target imports as `scenarios.external.agents...` from the root.
        patch.syspath_prepend(str(ROOT))
        runs.append(run_scenario(TARGET))
    return build_results(runs)


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory) -> Path:
    logging.getLogger("harness").setLevel(logging.ERROR)
    folder = tmp_path_factory.mktemp("rendering")
    # In a thread of its own: the browser's event loop may already run in this one.
    with ThreadPoolExecutor(1) as pool:
        results = pool.submit(_results, folder).result()
    assert [s.status for s in results.scenarios] == ["passed"] * 6
    path = folder / "report.html"
    write_html(path, results)
    # The same report with each card's details packed (as a large report has them).
    (folder / "packed.html").write_text(render_html(results, packed=True), encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def browser(report: Path) -> Iterator[Any]:
    with open_browser() as browser:
        yield browser


@pytest.fixture
def page(report: Path, browser: Any) -> Iterator[Any]:
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    page = context.new_page()
    page.goto(report.as_uri(), wait_until="load")
    try:
        yield page
    finally:
        context.close()


def _card(page: Any, name: str) -> Any:
    card = page.locator("details.scenario", has=page.locator(".name", has_text=name)).first
    card.evaluate("card => { card.open = true; }")
    return card


def _overlap(a: dict[str, float], b: dict[str, float]) -> bool:
    return not (
        a["right"] <= b["left"]
        or b["right"] <= a["left"]
        or a["bottom"] <= b["top"]
        or b["bottom"] <= a["top"]
    )


def test_parallel_calls_are_named_beside_their_lanes_without_overlap(page: Any) -> None:
    card = _card(page, "parallel")
    cell = card.locator("tr.item.tools td.clock").first
    labels = cell.locator(".lanes span").evaluate_all(
        "spans => spans.map(s => ({text: s.textContent, box: s.getBoundingClientRect().toJSON()}))"
    )
    bars = cell.locator("svg.track rect").evaluate_all(
        "rects => rects.map(r => r.getBoundingClientRect().toJSON())"
    )
    track = cell.locator("svg.track").evaluate("svg => svg.getBoundingClientRect().toJSON()")
    assert [label["text"] for label in labels] == [
        "get_weather",
        "find_restaurants_with_a_long_name",
        "get_time",
    ]
    boxes = [label["box"] for label in labels]
    for i, box in enumerate(boxes):
        assert box["height"] > 0 and box["width"] > 0
        for other in boxes[i + 1 :]:
            assert not _overlap(box, other), (box, other)
        # Beside its own bar: left of the track, level with the bar.
        middle = (box["top"] + box["bottom"]) / 2
        assert bars[i]["top"] <= middle <= bars[i]["bottom"], (labels[i]["text"], box, bars[i])
        assert box["right"] <= track["left"] + 0.5
    # The long name is cut with an ellipsis in its gutter and whole in its title.
    long = cell.locator(".lanes span").nth(1)
    assert long.get_attribute("title") == "find_restaurants_with_a_long_name"
    assert long.evaluate("s => s.scrollWidth > s.clientWidth")


def test_every_row_of_a_timeline_shares_one_time_axis(page: Any) -> None:
    card = _card(page, "parallel")
    tracks = card.locator("table.timeline svg.track").evaluate_all(
        "all => all.map(s => { const b = s.getBoundingClientRect(); return [b.left, b.right]; })"
    )
    assert len(tracks) == 3  # LLM call, the parallel plan, LLM call
    assert len({round(left) for left, _ in tracks}) == 1
    assert len({round(right) for _, right in tracks}) == 1
    # On that axis the plan starts where the first LLM call ends (1 s of 3.5 s).
    first_llm = card.locator("tr.item.llm svg.track rect").first
    plan = card.locator("tr.item.tools svg.track rect").first
    llm_end = first_llm.evaluate("r => r.getBoundingClientRect().right")
    plan_start = plan.evaluate("r => r.getBoundingClientRect().left")
    assert abs(llm_end - plan_start) < 1.0


def test_matrix_columns_follow_their_values_numerically(page: Any) -> None:
    columns = page.locator("#matrix th.combo").all_inner_texts()
    assert columns == ["max_iterations=3", "max_iterations=10", "max_iterations=20"]
    # Each cell links to the card of its own combination.
    cells = page.locator("#matrix td.cell a").evaluate_all(
        "links => links.map(a => document.querySelector(a.getAttribute('href')).querySelector('.name').textContent)"
    )
    assert [c.split("[")[1] for c in cells] == [c + "]" for c in columns]


def test_the_judges_cost_has_a_pill_of_its_own(page: Any) -> None:
    card = _card(page, "judged")
    pills = card.locator(".ident .pill.usage").all_inner_texts()
    assert pills == [
        "prompt 10 · completion 5 · total 15 tokens",
        "judge: 1 request · prompt 100 · completion 20 · total 120 tokens",
    ]


def _clock(card: Any) -> tuple[str, list[float], list[str]]:
    """A card's clock heading, where each row's first bar starts on the track (0 to 1), and
    each row's written times."""
    heading = card.locator("table.timeline th.clock").first.inner_text()
    starts = card.locator("table.timeline > tbody > tr.item td.clock").evaluate_all(
        """cells => cells.map(cell => {
            const svg = cell.querySelector('svg.track');
            if (!svg) return 0;  // an all-zero clock draws no track
            const track = svg.getBoundingClientRect();
            const bar = cell.querySelector('svg.track rect').getBoundingClientRect();
            return (bar.left - track.left) / track.width;
        })"""
    )
    whens = card.locator("table.timeline > tbody > tr.item .when").all_inner_texts()
    return heading, starts, whens


def _on_the_wall_clock(card: Any) -> None:
    heading, starts, whens = _clock(card)
    assert heading.startswith("wall clock, 0 → "), heading
    assert "simulated" not in heading
    # LLM call, plan, LLM call, parallel plan, LLM call: in order along the axis, none at 0.
    assert len(starts) == 5
    assert all(0 < a <= b for a, b in itertools.pairwise(starts)), starts
    assert starts[0] < starts[2] < starts[4] < 1, starts
    assert all(w.endswith(" s") and "*" not in w for w in whens), whens
    assert "Wall clock" in card.locator("p.note.wall-clock").inner_text()


def test_an_external_targets_timeline_is_on_the_wall_clock(page: Any) -> None:
    _on_the_wall_clock(_card(page, "raw-sync"))


def test_an_own_loop_timeline_stays_on_the_simulated_clock(page: Any) -> None:
    card = _card(page, "parallel")
    heading, starts, _ = _clock(card)
    assert heading.startswith("simulated clock, 0 → 3.50 s"), heading
    assert "wall" not in heading
    assert starts[0] == 0  # the first LLM call starts the simulated clock
    assert card.locator("p.note.wall-clock").count() == 0


def test_a_packed_cards_timeline_is_on_the_wall_clock_once_opened(
    report: Path, browser: Any
) -> None:
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    page = context.new_page()
    try:
        page.goto((report.parent / "packed.html").as_uri(), wait_until="load")
        assert page.locator("table.timeline").count() == 0  # packed until opened
        card = page.locator("details.scenario", has=page.locator(".name", has_text="raw-sync"))
        card.locator("summary").first.click()
        card.locator("table.timeline").wait_for(state="visible")
        _on_the_wall_clock(card)
    finally:
        context.close()
