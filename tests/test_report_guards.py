"""The report's timeline marks a detector's window, a nudge, and the turns of a
conversation (scenario files run by the real runner)."""

from __future__ import annotations

from pathlib import Path

from harness.report._timeline import build_timeline
from harness.scenario import run_scenario

SCENARIOS = Path(__file__).resolve().parent.parent / "scenarios"


def test_a_detector_window_is_marked_from_final_data():
    result = run_scenario(SCENARIOS / "stuck" / "alternating.scenario.yaml")
    timeline = build_timeline(result)

    assert timeline.detector == "alternating"
    assert timeline.window == [1, 2, 3, 4]
    assert [it.number for it in timeline.iterations if it.in_window] == [1, 2, 3, 4]


def test_a_nudge_is_marked_at_its_iteration():
    result = run_scenario(SCENARIOS / "stuck" / "nudge-works.scenario.yaml")
    timeline = build_timeline(result)

    assert list(timeline.nudges) == [4]
    assert timeline.nudges[4]["detector"] == "repeat"
    assert timeline.nudges[4]["window"] == [1, 2, 3]
    assert timeline.window == []  # the run completed: no stopping window


def test_turns_are_sections_of_one_timeline():
    result = run_scenario(SCENARIOS / "conversations" / "three-turns.scenario.yaml")
    timeline = build_timeline(result)

    assert {first: t["turn"] for first, t in timeline.turns.items()} == {1: 1, 5: 2, 9: 3}
    assert [it.number for it in timeline.iterations] == list(range(1, 11))
    # LLM calls count on across turns in the one timeline.
    calls = [item.call for it in timeline.iterations for item in it.items if item.kind == "llm"]
    assert calls == [1, 2, 3, 4, 5]


def test_the_html_report_shows_the_marks(tmp_path):
    from harness._results import build_results
    from harness.report import render_html

    results = build_results(
        [
            run_scenario(SCENARIOS / name)
            for name in (
                "stuck/alternating.scenario.yaml",
                "stuck/nudge-fails.scenario.yaml",
                "conversations/three-turns.scenario.yaml",
                "budgets/tokens.scenario.yaml",
            )
        ]
    )
    html = render_html(results)

    assert "Stuck (alternating): the 4 repeats" in html
    assert 'class="nudge-label"' in html and "You seem to be stuck" in html
    assert "Turn 2 (iterations 5\u20138): the user says <q>And in Rome?</q>" in html
    assert "t-budget" in html
