"""The HTML report: deterministic, self-contained, escaped, and showing what a reader needs."""

from __future__ import annotations

import base64
import hashlib
import logging
import re
from html.parser import HTMLParser
from importlib import resources
from pathlib import Path

import pytest
from report_samples import (
    HOSTILE,
    MARKUP,
    hostile_scenario,
    long_scenario,
    sample_baseline,
    sample_results,
    sample_scenarios,
)

from harness._results import Results
from harness.report import diff_results, render_html, write_html
from harness.report._html import _environment
from harness.report._markup import clip
from harness.report._views import COMPACT_AFTER, Limits


@pytest.fixture(autouse=True)
def _quiet_loop_logs(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.ERROR, logger="harness")


@pytest.fixture(scope="module")
def results() -> Results:
    return sample_results()


@pytest.fixture(scope="module")
def page(results: Results) -> str:
    return render_html(results, diff_results(sample_baseline(), results, source="baseline.json"))


class Scan(HTMLParser):
    """Collects what the browser would see: elements, attributes, text, scripts."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.text: list[str] = []
        self.scripts: list[str] = []
        self._in_script = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))
        self._in_script = tag == "script"

    def handle_endtag(self, tag: str) -> None:
        self._in_script = False

    def handle_data(self, data: str) -> None:
        (self.scripts if self._in_script else self.text).append(data)


def scan(html: str) -> Scan:
    parser = Scan()
    parser.feed(html)
    parser.close()
    return parser


def section(html: str, anchor_text: str) -> str:
    """The HTML of the scenario card whose name starts with ``anchor_text``."""
    cards = re.split(r'(?=<details class="scenario )', html)
    matches = [c for c in cards if f'<span class="name">{anchor_text}' in c]
    assert len(matches) == 1, anchor_text
    return matches[0]


# -- determinism ---------------------------------------------------------------------------


def test_same_results_give_byte_identical_html(results: Results) -> None:
    first = render_html(results)
    assert render_html(results) == first
    # Through results.json and back (what `harness report` does), and from fresh runs.
    assert render_html(Results.model_validate_json(results.to_json())) == first
    assert render_html(sample_results()) == first


def test_wall_time_is_not_shown_per_scenario(results: Results) -> None:
    # Wall time varies run to run; the report only shows deterministic values per scenario,
    # so two runs of the same inputs give the same page apart from meta.
    slower = results.model_copy(
        update={
            "scenarios": [
                s.model_copy(update={"wall_time": s.wall_time + 5}) for s in results.scenarios
            ]
        }
    )
    assert render_html(slower) == render_html(results)


def test_no_random_ids_or_timestamps(results: Results) -> None:
    html = render_html(results)
    ids = [a["id"] for _, a in scan(html).tags if a.get("id")]
    assert len(ids) == len(set(ids))
    assert [i for i in ids if i and i.startswith("s") and i[1:].isdigit()] == [
        f"s{n}" for n in range(1, len(results.scenarios) + 1)
    ]
    # The only timestamp is the run's own start time from meta.
    stamps = set(re.findall(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d[^ <\"]*", html))
    assert stamps == {results.meta["started"]}


# -- self-contained, CSP -------------------------------------------------------------------


def test_no_network_assets_of_any_kind(page: str) -> None:
    parsed = scan(page)
    for tag, attrs in parsed.tags:
        assert "src" not in attrs, tag  # no scripts, images or frames from anywhere
        if tag == "link":
            pytest.fail(f"external stylesheet or font link: {attrs}")
        href = attrs.get("href")
        if href is not None:
            assert href.startswith("#"), href  # only in-page links
    assert "@import" not in page and "url(" not in page
    assert "http://" not in page.replace("http://www.w3.org/2000/svg", "")
    assert "https://" not in page


def test_csp_allows_exactly_the_inline_style_and_script(page: str) -> None:
    parsed = scan(page)
    (csp,) = [
        a["content"]
        for t, a in parsed.tags
        if t == "meta" and a.get("http-equiv") == "Content-Security-Policy"
    ]
    assert csp is not None
    assert "default-src 'none'" in csp
    assert "unsafe-inline" not in csp and "unsafe-eval" not in csp
    (script,) = parsed.scripts
    digest = base64.b64encode(hashlib.sha256(script.encode()).digest()).decode()
    assert f"script-src 'sha256-{digest}'" in csp
    style = page.split("<style>", 1)[1].split("</style>", 1)[0]
    digest = base64.b64encode(hashlib.sha256(style.encode()).digest()).decode()
    assert f"style-src 'sha256-{digest}'" in csp
    # A style="" attribute would be blocked by that CSP: there must be none.
    assert not [t for t, a in parsed.tags if "style" in a]
    # No inline event handlers either.
    assert not [t for t, a in parsed.tags if any(k.startswith("on") for k in a)]


def test_autoescape_is_on_whatever_the_template_name() -> None:
    env = _environment()
    assert env.autoescape is True
    template = env.from_string("{{ x }}")
    assert template.render(x="<b>") == "&lt;b&gt;"


def test_templates_are_flat_files_covered_by_package_data() -> None:
    # pyproject ships harness/report/templates/* (no subfolders): keep the layout flat.
    folder = resources.files("harness.report").joinpath("templates")
    entries = list(folder.iterdir())
    assert {e.name for e in entries} >= {
        "report.html.j2",
        "macros.html.j2",
        "report.css",
        "report.js",
    }
    assert all(e.is_file() for e in entries if e.name != "__pycache__")
    pyproject = Path(__file__).resolve().parents[1] / "pyproject.toml"
    assert '"report/templates/*"' in pyproject.read_text()


# -- escaping --------------------------------------------------------------------------------


def test_hostile_text_is_escaped_everywhere() -> None:
    html = render_html(sample_results([hostile_scenario()]))
    for key in MARKUP:
        assert HOSTILE[key] not in html
    parsed = scan(html)
    # Exactly one script element (ours) and no element the payloads try to create.
    assert [t for t, _ in parsed.tags if t == "script"] == ["script"]
    assert not [t for t, _ in parsed.tags if t == "img"]
    assert [t for t, _ in parsed.tags if t == "svg" and "onload" in _] == []
    assert not [a for _, a in parsed.tags if "autofocus" in a or "onerror" in a]
    # ... and the text reads as the model wrote it.
    text = "".join(parsed.text)
    assert HOSTILE["img"] in text
    assert HOSTILE["script"] in text
    assert "</script><script>" in text


def test_hostile_text_in_the_diff_is_escaped() -> None:
    old = sample_results([])
    new = sample_results([hostile_scenario()])
    html = render_html(new, diff_results(old, new))
    assert HOSTILE["img"] not in html
    assert not [t for t, _ in scan(html).tags if t == "img"]


def javascript_urls(parsed: Scan) -> list[tuple[str, str, str]]:
    """Every attribute whose value a browser would take as a javascript: URL."""
    return [
        (tag, name, value)
        for tag, attrs in parsed.tags
        for name, value in attrs.items()
        if value and re.sub(r"[\x00-\x20]", "", value).lower().startswith("javascript:")
    ]


@pytest.mark.parametrize("where", ["report", "diff"])
def test_template_syntax_and_javascript_urls_stay_text(where: str) -> None:
    new = sample_results([hostile_scenario()])
    old = sample_results([hostile_scenario(before=True)])
    diff = diff_results(old, new) if where == "diff" else None
    assert diff is None or diff.changed[0].fields == ["tool_calls", "final"]
    html = render_html(new, diff)
    parsed = scan(html)
    text = "".join(parsed.text)
    assert not javascript_urls(parsed)
    assert not [a for t, a in parsed.tags if t == "a" and not a.get("href", "").startswith("#")]
    # Shown as written, in the name, description, tags, model text, tool arguments and
    # results and the final answer (and in the diff's trajectory and answers).
    assert text.count(HOSTILE["template"]) >= (7 if diff is None else 10)
    assert "sum=49" not in text and "loop1" not in text
    assert text.count(HOSTILE["md_link"]) >= (6 if diff is None else 9)
    assert text.count(HOSTILE["js_url"]) >= (6 if diff is None else 9)
    if diff is not None:
        section = html.split('id="diff"', 1)[1].split("</section>", 1)[0]
        diff_text = "".join(scan(section).text)
        assert HOSTILE["template"] in diff_text and HOSTILE["md_link"] in diff_text
        for key in MARKUP:
            assert HOSTILE[key] not in section


def test_clip_escapes_then_cuts_with_a_visible_marker() -> None:
    assert str(clip("<b>", 10)) == "&lt;b&gt;"
    cut = str(clip("<img src=x onerror=alert(1)>" + "a" * 50, 5))
    assert cut.startswith("&lt;img")
    assert "<img" not in cut
    assert '<span class="clip">… 73 more characters not shown</span>' in cut
    assert "1 more character not shown" in str(clip("abcdef", 5))


def test_long_texts_are_cut_with_a_marker(results: Results) -> None:
    long = long_scenario(1)
    html = render_html(sample_results([long]))
    assert "more characters not shown" in html
    final = long.final.content or ""
    assert len(final) > Limits.final
    assert final not in html


# -- content ----------------------------------------------------------------------------------


def test_summary_counts_and_charts(results: Results, page: str) -> None:
    parsed = scan(page)
    cards = re.findall(r'<div class="card st-(\w+)[^"]*"><span class="n">(\d+)</span>', page)
    assert dict(cards) == {k: str(v) for k, v in results.summary.by_status.items()}
    labels = [a.get("aria-label") for t, a in parsed.tags if t == "svg" and a.get("role") == "img"]
    assert labels == [
        "Scenarios by termination",
        "Iterations per scenario",
        "Simulated time per scenario",
    ]
    # One bar per scenario in the per-scenario charts, each linking to its scenario.
    charts = page.split('<section class="charts"', 1)[1].split("</section>", 1)[0]
    bars = re.findall(r'<a href="(#s\d+)"><rect', charts)
    assert bars == [f"#s{n}" for n in range(1, len(results.scenarios) + 1)] * 2


def test_filters_are_there_for_every_status_and_termination(results: Results, page: str) -> None:
    parsed = scan(page)
    buttons = [
        (a["data-filter"], a["data-value"])
        for t, a in parsed.tags
        if t == "button" and "data-filter" in a
    ]
    assert ("status", "") in buttons and ("termination", "") in buttons
    assert {v for k, v in buttons if k == "status"} == {"", "passed", "failed", "error"}
    assert {v for k, v in buttons if k == "termination"} == {"", *results.summary.by_termination}
    cards = [a for t, a in parsed.tags if t == "details" and "scenario" in (a.get("class") or "")]
    assert [(c["data-status"], c["data-termination"]) for c in cards] == [
        (s.status, s.termination.value) for s in results.scenarios
    ]


def test_failing_scenarios_open_passing_ones_closed(page: str) -> None:
    cards = [
        a for t, a in scan(page).tags if t == "details" and "scenario" in (a.get("class") or "")
    ]
    for card in cards:
        assert ("open" in card) == (card["data-status"] != "passed")


def test_diff_is_at_the_top(page: str) -> None:
    diff_at = page.index('id="diff"')
    assert diff_at < page.index('class="charts"') < page.index('id="scenarios"')
    for category in ("regressions", "fixed", "changed", "added", "removed"):
        assert f'id="diff-{category}"' in page


def test_diff_stored_in_results_is_shown(results: Results) -> None:
    with_diff = results.model_copy(update={"baseline": diff_results(sample_baseline(), results)})
    assert 'id="diff"' in render_html(with_diff)
    assert 'id="diff"' not in render_html(results)


def test_empty_diff_says_so(results: Results) -> None:
    html = render_html(results, diff_results(results, results))
    assert "every scenario behaves exactly as in the baseline" in html


def test_expectations_table_shows_expected_and_actual(page: str) -> None:
    card = section(page, "max-iterations-wandering")
    row = re.search(r'<tr class="bad">.*?</tr>', card, re.S)
    assert row is not None
    assert "<code>termination</code>" in row.group(0)
    assert "<pre>completed</pre>" in row.group(0) and "<pre>max_iterations</pre>" in row.group(0)


def test_parallel_calls_side_by_side_on_the_clock(page: str) -> None:
    card = section(page, "weather-and-restaurants")
    rows = re.findall(r'<tr class="item tools">.*?</tr>', card, re.S)
    assert len(rows) == 2
    parallel = rows[1]
    assert '<div class="sub">parallel</div>' in parallel
    assert parallel.count('<div class="call tc-ok">') == 2
    # Both calls start at the same simulated time: two lanes, same x.
    xs = re.findall(r'<rect x="([\d.]+)" y="(\d+)"', parallel)
    assert len(xs) == 2 and xs[0][0] == xs[1][0] and xs[0][1] != xs[1][1]
    assert "1.80 s → 2.60 s" in parallel
    assert "simulated clock, 0 → 3.50 s" in card


def test_stagnation_window_is_marked(page: str) -> None:
    card = section(page, "stagnation-same-search")
    assert "Stagnation window: the 3 identical tool plans below ran" in card
    assert card.count('<tbody class="iter in-window">') == 3
    assert '<span class="k declined">declined</span>' in card
    # The declined plan's iteration is not part of the window.
    last = card.split('<tbody class="iter">')[-1]
    assert "declined" in last


def test_the_card_header_counts_calls_that_ran_and_the_declined_ones_apart(page: str) -> None:
    # Three plans of one call ran; the fourth, identical, was declined (not run): the
    # header says 3 tool calls, as tool_calls.count would, and 1 not run.
    card = section(page, "stagnation-same-search")
    facts = card.split('<span class="facts">', 1)[1].split("</span>", 1)[0]
    assert "· 3 tool · 1 not run ·" in facts


def test_errors_and_endings_are_shown(page: str) -> None:
    crash = section(page, "observer-plugin-crash")
    assert '<div class="errors">' in crash and "KeyError" in crash
    rate = section(page, "rate-limited")
    assert "HTTP 429: Rate limit reached" in rate
    assert "the call failed" in rate
    invalid = section(page, "malformed-arguments")
    assert '<span class="k stopped">stopped</span>' in invalid
    assert "{&#34;location&#34;: " in invalid  # the raw arguments the model sent
    assert "Invalid JSON" in invalid


def test_memory_of_a_passed_scenario_is_shown_but_not_as_an_error(
    results: Results, page: str
) -> None:
    # stagnation-same-search expects stagnation and passes: its "Stagnation detected"
    # memory entry is how it ended, not an error.
    card = section(page, "stagnation-same-search")
    assert '<div class="errors">' not in card
    notes = card.split('<div class="notes">', 1)[1].split("</div>\n    </div>", 1)[0]
    assert "Stagnation detected: the same tool plan was requested 4 times in a row" in notes
    # The same run failing an expectation: the entry is part of what went wrong.
    (stagnation,) = [s for s in results.scenarios if s.name == "stagnation-same-search"]
    failed = stagnation.model_copy(update={"status": "failed"})
    card = section(render_html(sample_results([failed])), "stagnation-same-search")
    assert '<div class="notes">' not in card
    errors = card.split('<div class="errors">', 1)[1]
    assert '<span class="ek">memory</span> Stagnation detected' in errors


def test_a_real_error_stays_red_and_is_shown_once(page: str) -> None:
    # rate-limited passes (it expects llm_error), but its HTTP 429 is a real error; the
    # loop's memory entry restating it is not shown a second time.
    card = section(page, "rate-limited")
    errors = card.split('<div class="errors">', 1)[1].split("</div>\n    </div>", 1)[0]
    assert "HTTP 429: Rate limit reached for gpt-4o-mini" in errors
    assert errors.count("Rate limit reached") == 1
    assert '<div class="notes">' not in card


def test_search_covers_id_name_description_and_tags(results: Results, page: str) -> None:
    cards = [
        a for t, a in scan(page).tags if t == "details" and "scenario" in (a.get("class") or "")
    ]
    for card, scenario in zip(cards, results.scenarios, strict=True):
        search = card["data-search"] or ""
        assert scenario.id.lower() in search and scenario.name.lower() in search
        assert (scenario.description or "").lower() in search
        for tag in scenario.tags:
            assert tag.lower() in search
    assert "Filter by name, id, description or tag" in page


def chart_svgs(html: str) -> list[str]:
    charts = html.split('<section class="charts"', 1)[1].split("</section>", 1)[0]
    return re.findall(r'<svg class="vbars".*?</svg>', charts, re.S)[:2]


def test_chart_bars_carry_their_scenario_names(results: Results, page: str) -> None:
    for svg in chart_svgs(page):
        links = re.findall(r'<a href="#(s\d+)">(.*?)</a>', svg, re.S)
        assert [anchor for anchor, _ in links] == [f"s{n}" for n in range(1, 12)]
        for (_, body), scenario in zip(links, results.scenarios, strict=True):
            label = "".join(scan(body.split("</title>", 1)[1]).text)
            name = scenario.name
            assert label == (name if len(name) <= 16 else name[:15] + "…")


def test_many_bars_get_numbered_ticks_matching_the_cards() -> None:
    one = sample_results().scenarios[0]
    many = sample_results(
        [one.model_copy(update={"id": f"x{i:04d}", "name": f"n{i}"}) for i in range(1000)]
    )
    html = render_html(many)
    for svg in chart_svgs(html):
        assert 'class="bl"' not in svg  # no names: 1,000 of them would be unreadable
        ticks = re.findall(r'<text x="[\d.]+" y="[\d.]+" class="bn">(\d+)</text>', svg)
        assert ticks == ["1", *(str(n) for n in range(100, 1001, 100))]
        # Light: one link and rect per bar, and a handful of texts.
        assert svg.count("<text") <= 16
        assert svg.count("<rect") == 1000
    # The tick numbers are the cards' numbers.
    assert '<span class="no">#100</span>' in html
    assert re.search(r'<span class="no">#100</span>.*?<span class="name">n99</span>', html, re.S)


def test_transcript_is_collapsed(page: str) -> None:
    tags = scan(page).tags
    transcripts = [a for t, a in tags if t == "details" and a.get("class") == "transcript"]
    assert len(transcripts) == len(sample_scenarios())
    assert not [a for a in transcripts if "open" in a]


def test_large_reports_switch_to_compact_texts() -> None:
    small = sample_results([long_scenario(1)])
    assert not Limits.for_results(small).compact
    per = len(small.scenarios[0].transcript)
    big = sample_results(
        [
            small.scenarios[0].model_copy(update={"id": f"x{i}"})
            for i in range(COMPACT_AFTER // per + 1)
        ]
    )
    limits = Limits.for_results(big)
    assert limits.compact and limits.message < Limits().message
    html = render_html(big)
    assert "texts are cut shorter than usual" in html
    assert '<pre class="log">' in html


def test_write_html_writes_the_file(tmp_path: Path, results: Results) -> None:
    out = write_html(tmp_path / "sub" / "report.html", results)
    assert out.read_text(encoding="utf-8") == render_html(results)
    assert oct(out.stat().st_mode & 0o777) == "0o644"
