"""A large report packs each scenario's details and unpacks them when a card opens: the
details a reader gets are the ones a small report shows inline (docs/report.md)."""

from __future__ import annotations

import base64
import logging
import re
import zlib
from collections.abc import Iterator
from html import unescape
from pathlib import Path
from typing import Any

import pytest
from chromium import open_browser
from report_samples import HOSTILE, sample_results

from harness._results import build_results
from harness.report import render_html, write_html
from harness.report._cards import PACK_AFTER

CARD = re.compile(r'<details class="scenario[^"]*" id="(s\d+)"[^>]*>(.*?)\n</details>', re.S)
BODY = re.compile(r'<div class="body"( data-packed="([^"]*)")?>(.*?)</div>\n?$', re.S)


def bodies(html: str) -> dict[str, tuple[str | None, str]]:
    """Each card's (packed data or None, inline body), by anchor."""
    out = {}
    for anchor, card in CARD.findall(html):
        match = BODY.search(card)
        assert match is not None, card[:300]
        out[anchor] = (match.group(2), match.group(3))
    return out


def unpacked(data: str) -> str:
    return zlib.decompress(base64.b64decode(unescape(data)), -15).decode("utf-8")


def test_packed_details_are_the_inline_ones() -> None:
    results = sample_results()
    inline = bodies(render_html(results, packed=False))
    packed = bodies(render_html(results, packed=True))
    assert inline.keys() == packed.keys() and len(inline) == results.summary.total
    for anchor, (data, body) in packed.items():
        assert data is not None and body == ""
        assert inline[anchor][0] is None
        assert unpacked(data) == inline[anchor][1]


def test_small_reports_stay_inline_and_large_ones_pack() -> None:
    results = sample_results()
    assert "data-packed=" not in render_html(results)
    many = results.model_copy(update={"scenarios": results.scenarios * (PACK_AFTER // 5)})
    assert len(many.scenarios) > PACK_AFTER
    page = render_html(many)
    assert page.count("data-packed=") == len(many.scenarios)
    assert 'table class="timeline"' not in page  # no body parsed when the page opens


# -- in a real browser ------------------------------------------------------------------------


@pytest.fixture(scope="module")
def large_report(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A report of more than PACK_AFTER scenarios (the sample ones, copied under new ids)."""
    logging.getLogger("harness").setLevel(logging.ERROR)
    sample = sample_results()
    copies = -(-(PACK_AFTER + 1) // len(sample.scenarios))
    scenarios = [
        s.model_copy(update={"id": f"{s.id}-{k:03d}", "name": f"{s.name}-{k:03d}"})
        for k in range(copies)
        for s in sample.scenarios
    ]
    path = tmp_path_factory.mktemp("large") / "report.html"
    write_html(path, build_results(scenarios))
    return path


@pytest.fixture
def large_page(large_report: Path) -> Iterator[Any]:
    with open_browser() as browser:
        page = browser.new_page(viewport={"width": 1280, "height": 900})
        page.problems = []  # type: ignore[attr-defined]
        page.on("console", lambda msg: msg.type == "error" and page.problems.append(msg.text))
        page.on("pageerror", lambda exc: page.problems.append(str(exc)))
        page.goto(large_report.as_uri(), wait_until="load")
        yield page


def test_a_large_reports_details_open_on_a_click(large_page: Any) -> None:
    page = large_page
    assert page.locator("table.timeline").count() == 0  # only the index when it opens
    card = page.locator("#scenarios details.scenario").nth(3)
    card.locator("summary").first.click()
    timeline = card.locator("table.timeline")
    timeline.wait_for(state="visible")
    name = card.locator("summary .name").inner_text()
    assert card.locator("code.sid").inner_text().endswith(f"::{name}")  # this card's details
    assert timeline.locator("tbody.end").count() == 1
    assert page.locator("table.timeline").count() == 1  # the others stay packed
    card.locator("summary").first.click()  # closed and opened again: unpacked once
    card.locator("summary").first.click()
    assert card.locator("table.timeline").count() == 1
    assert page.problems == []


def test_a_packed_hostile_text_shows_as_text_and_never_runs(large_page: Any) -> None:
    page = large_page
    card = page.locator("#scenarios details.scenario", has_text="hostile-text").nth(1)
    card.locator("summary").first.click()
    card.locator("details.transcript > summary").click()
    page.wait_for_timeout(200)
    assert page.evaluate("typeof window.__pwned") == "undefined"
    assert page.title() != "PWNED"
    assert page.evaluate("document.querySelectorAll('img, iframe, object, embed').length") == 0
    text = card.inner_text()
    for payload in HOSTILE.values():
        assert payload in text
    assert page.problems == []


def test_a_link_to_a_packed_card_opens_it(large_page: Any) -> None:
    page = large_page
    page.evaluate("location.hash = '#s420'")
    page.locator("#s420 table.timeline").wait_for(state="visible")


def test_a_large_reports_filters_count_and_hide_its_cards(large_page: Any) -> None:
    # A large report keeps its cards in blocks: the filters must still find every card.
    page = large_page
    cards = page.locator("#scenarios details.scenario")
    total = cards.count()
    failed = page.locator("#scenarios details.scenario[data-status=failed]").count()
    assert total > PACK_AFTER and 0 < failed < total
    page.locator('#filters button[data-filter="status"][data-value="failed"]').click()
    assert page.locator("#shown").inner_text() == f"{failed} of {total} shown"
    hidden = page.locator("#scenarios details.scenario[hidden]").count()
    assert hidden == total - failed
    assert page.problems == []
