"""Regenerate the report screenshots in docs/ with Debian's headless chromium.

    python docs/make_screenshots.py [--out docs]

Renders the sample results (tests/report_samples.py: scenario files run by the real
runner, one per termination, plus a baseline that differs in every diff category) and
saves:

- report-summary.png: the top of a report against a baseline: the counts (a regression
  among them) and the start of the diff, down to its regressions and fixes;
- report-charts.png: the charts and the filters;
- report-diff.png: the whole baseline diff;
- report-timeline.png: one scenario's timeline, parallel tool calls on the simulated clock;
- report-stagnation.png: a timeline with its stagnation window marked.
"""

from __future__ import annotations

import argparse
import logging
import sys
import tempfile
from pathlib import Path

from harness.report import diff_results, write_html

WIDTH = 1280

# The sample scenarios and the chromium launcher are test support, not library code.
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path(__file__).resolve().parent)
    args = parser.parse_args()
    from chromium import find_chromium, launch_chromium
    from report_samples import sample_baseline, sample_results, sample_scenarios

    executable = find_chromium()
    if executable is None:
        print("chromium is not installed: apt-get install -y chromium", file=sys.stderr)
        return 2
    from playwright.sync_api import sync_playwright

    logging.getLogger("harness").setLevel(logging.ERROR)
    # The samples without the one full of script-injection attempts (the tests use it).
    results = sample_results(sample_scenarios(hostile=False))
    diff = diff_results(sample_baseline(hostile=False), results, source="reports/baseline.json")
    with tempfile.TemporaryDirectory() as tmp:
        plain = write_html(Path(tmp) / "plain.html", results)
        with_diff = write_html(Path(tmp) / "diff.html", results, diff)
        with sync_playwright() as playwright:
            browser = launch_chromium(playwright, executable, "--hide-scrollbars")
            # bypass_csp only so that this script may add a little style (below): the page's
            # own CSP would (rightly) refuse it.
            context = browser.new_context(
                viewport={"width": WIDTH, "height": 900}, device_scale_factor=1, bypass_csp=True
            )
            page = context.new_page()

            # What the Quick start's run shows first: the header's counts with the
            # regression card, then the diff down to the end of its "Fixed" table.
            page.goto(with_diff.as_uri())
            bottom = page.eval_on_selector(
                "#diff-changed", "el => el.getBoundingClientRect().top + window.scrollY"
            )
            page.screenshot(
                path=args.out / "report-summary.png",
                clip={"x": 0, "y": 0, "width": WIDTH, "height": bottom - 6},
                full_page=True,
            )
            page.locator("#diff").screenshot(path=args.out / "report-diff.png")
            top = page.eval_on_selector(
                ".charts", "el => el.getBoundingClientRect().top + window.scrollY"
            )
            bottom = page.eval_on_selector(
                "#filters", "el => el.getBoundingClientRect().bottom + window.scrollY"
            )
            page.screenshot(
                path=args.out / "report-charts.png",
                clip={"x": 0, "y": top - 12, "width": WIDTH, "height": bottom - top + 20},
                full_page=True,
            )

            # Static filter bar (it would cover the card's top) and every card rendered (the
            # page lets the browser skip off-screen cards, which has them measured too small).
            pin = ".filters { position: static; } .scenario { content-visibility: visible; }"
            for name, file in (
                ("weather-and-restaurants", "report-timeline.png"),
                ("stagnation-same-search", "report-stagnation.png"),
            ):
                page.goto(plain.as_uri())
                page.add_style_tag(content=pin)
                card = page.locator("#scenarios > details.scenario", has_text=name).first
                card.evaluate("el => { el.open = true; }")
                card.screenshot(path=args.out / file)
            browser.close()
    for file in (
        "report-summary",
        "report-charts",
        "report-diff",
        "report-timeline",
        "report-stagnation",
    ):
        print(args.out / f"{file}.png")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
