"""The report in a real browser: Debian's chromium, headless, driven by playwright.

It must load from file:// with no network, the filters must work, and hostile model
and tool text must show as text without ever running. CI installs chromium (.ci/run);
without it these tests fail with a message saying how to install it, never skip.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
from chromium import open_browser
from report_samples import HOSTILE, sample_baseline, sample_results

from harness._results import Results
from harness.report import diff_results, write_html


@pytest.fixture(scope="module")
def browser(report: Path) -> Iterator[Any]:
    with open_browser() as browser:
        yield browser


RESULTS: list[Results] = []  # the rendered results, for the expected counts


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory) -> Path:
    logging.getLogger("harness").setLevel(logging.ERROR)
    results = sample_results()
    RESULTS[:] = [results]
    path = tmp_path_factory.mktemp("report") / "report.html"
    write_html(path, results, diff_results(sample_baseline(), results, source="baseline.json"))
    return path


def counts() -> tuple[int, int, int]:
    """(total, passed, failed) of the rendered results."""
    summary = RESULTS[0].summary
    return summary.total, summary.by_status.get("passed", 0), summary.by_status.get("failed", 0)


@pytest.fixture
def page(report: Path, browser: Any) -> Iterator[Any]:
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    page = context.new_page()
    page.requests = []  # type: ignore[attr-defined]
    page.problems = []  # type: ignore[attr-defined]
    page.on("request", lambda request: page.requests.append(request.url))
    page.on("console", lambda msg: msg.type == "error" and page.problems.append(msg.text))
    page.on("pageerror", lambda exc: page.problems.append(str(exc)))
    page.goto(report.as_uri(), wait_until="load")
    try:
        yield page
    finally:
        context.close()


def visible_cards(page: Any) -> list[dict[str, str]]:
    return page.eval_on_selector_all(
        "#scenarios > details.scenario",
        "cards => cards.filter(c => !c.hidden && c.offsetParent !== null)"
        ".map(c => ({status: c.dataset.status, termination: c.dataset.termination}))",
    )


def test_loads_from_file_with_no_network(page: Any) -> None:
    total, passed, _ = counts()
    assert page.title() == f"harness report: {passed}/{total} passed"
    assert page.inner_text("#shown") == f"{total} of {total} shown"
    assert len(visible_cards(page)) == total
    assert page.is_visible("#diff")
    # The only request is the file itself: nothing else is fetched, from anywhere.
    assert page.requests == [page.url]
    assert page.problems == []


def test_status_and_termination_filters(page: Any) -> None:
    total, _, failed = counts()
    assert failed >= 2
    page.click('#filters button[data-filter="status"][data-value="failed"]')
    cards = visible_cards(page)
    assert [c["status"] for c in cards] == ["failed"] * failed
    assert page.inner_text("#shown") == f"{failed} of {total} shown"
    assert (
        page.get_attribute('button[data-filter="status"][data-value="failed"]', "aria-pressed")
        == "true"
    )

    page.click('#filters button[data-filter="termination"][data-value="stagnation"]')
    assert visible_cards(page) == []
    assert page.is_visible("#none-shown")

    page.click('#filters button[data-filter="status"][data-value=""]')
    assert visible_cards(page) == [{"status": "passed", "termination": "stagnation"}]
    assert not page.is_visible("#none-shown")

    page.click('#filters button[data-filter="termination"][data-value=""]')
    page.fill("#q", "WEATHER")
    assert len(visible_cards(page)) == 1
    page.fill("#q", "")
    assert len(visible_cards(page)) == total


def test_text_filter_searches_descriptions_and_tags(page: Any) -> None:
    results = RESULTS[0]
    page.fill("#q", "synthesized answer")  # in one description only
    assert page.inner_text("#shown") == f"1 of {counts()[0]} shown"
    faults = [s for s in results.scenarios if "faults" in s.tags]
    page.fill("#q", "FAULTS")  # a tag
    assert len(visible_cards(page)) == len(faults) >= 3


def test_chart_bar_opens_its_scenario_even_when_filtered_out(page: Any) -> None:
    page.click('#filters button[data-filter="status"][data-value="failed"]')
    target = page.eval_on_selector(
        "#scenarios > details.scenario[data-status=passed]", "el => el.id"
    )
    assert not page.is_visible(f"#{target}")
    page.click(f'.charts a[href="#{target}"]')
    assert page.is_visible(f"#{target}")
    assert page.eval_on_selector(f"#{target}", "el => el.open") is True


def shown_count(page: Any) -> str:
    return f"{len(visible_cards(page))} of {counts()[0]} shown"


def test_the_same_link_works_again_after_the_filter_hid_its_card(page: Any) -> None:
    # The second click on a link to the current hash fires no hashchange: the page must
    # act on the click itself.
    failed = '#filters button[data-filter="status"][data-value="failed"]'
    target = page.eval_on_selector(
        "#scenarios > details.scenario[data-status=passed]", "el => el.id"
    )
    bar = f'.charts a[href="#{target}"]'
    page.click(failed)
    page.click(bar)
    assert page.is_visible(f"#{target}")
    page.click(failed)
    assert not page.is_visible(f"#{target}")
    page.click(bar)
    assert page.is_visible(f"#{target}")
    assert page.eval_on_selector(f"#{target}", "el => el.open") is True
    assert page.evaluate("location.hash") == f"#{target}"
    # ... and the page went there: the card's top is on screen.
    top = page.eval_on_selector(f"#{target}", "el => el.getBoundingClientRect().top")
    assert 0 <= top < page.viewport_size["height"]

    # The same for a link in the baseline diff, to a failed scenario hidden by "passed".
    passed = '#filters button[data-filter="status"][data-value="passed"]'
    link = page.locator("#diff-regressions + table a").first
    regressed = link.get_attribute("href")[1:]
    for _ in range(2):
        page.click(passed)
        assert not page.is_visible(f"#{regressed}")
        link.click()
        assert page.is_visible(f"#{regressed}")
    assert page.problems == []


def test_the_count_stays_true_when_a_link_opens_a_hidden_card(page: Any) -> None:
    total, _, failed = counts()
    page.click('#filters button[data-filter="status"][data-value="failed"]')
    assert page.inner_text("#shown") == f"{failed} of {total} shown"
    target = page.eval_on_selector(
        "#scenarios > details.scenario[data-status=passed]", "el => el.id"
    )
    page.click(f'.charts a[href="#{target}"]')
    assert page.inner_text("#shown") == f"{failed + 1} of {total} shown" == shown_count(page)
    # Nothing matches, yet the linked card is there: "no scenario matches" must not show.
    page.click('#filters button[data-filter="termination"][data-value="stagnation"]')
    assert visible_cards(page) == []
    page.click(f'.charts a[href="#{target}"]')
    assert page.inner_text("#shown") == f"1 of {total} shown" == shown_count(page)
    assert not page.is_visible("#none-shown")


def test_typed_hash_and_back_button_still_open_cards(page: Any) -> None:
    ids = page.eval_on_selector_all(
        "#scenarios > details.scenario[data-status=passed]", "els => els.map(e => e.id)"
    )
    first, second = ids[0], ids[1]
    page.click(f'.charts a[href="#{first}"]')
    page.click(f'.charts a[href="#{second}"]')
    page.click('#filters button[data-filter="status"][data-value="failed"]')
    assert not page.is_visible(f"#{first}") and not page.is_visible(f"#{second}")
    page.go_back()  # back to #first: a hashchange, no click
    page.wait_for_function(f"location.hash === '#{first}'")
    assert page.is_visible(f"#{first}")
    assert page.inner_text("#shown") == shown_count(page)
    page.evaluate(f"location.hash = '#{second}'")  # as if typed in the address bar
    page.wait_for_function(f"!document.getElementById('{second}').hidden")
    assert page.inner_text("#shown") == shown_count(page)


def test_hostile_text_shows_as_text_and_never_runs(page: Any) -> None:
    card = page.locator("#scenarios > details.scenario", has_text="hostile-text")
    card.locator("summary").first.click()  # passed scenarios start collapsed
    card.locator("details.transcript > summary").click()
    page.wait_for_timeout(200)
    assert page.evaluate("typeof window.__pwned") == "undefined"
    assert page.title() != "PWNED"
    assert page.evaluate("document.querySelectorAll('img, iframe, object, embed').length") == 0
    text = card.inner_text()
    # The model's text and the tool's result are readable, verbatim.
    for payload in HOSTILE.values():
        assert payload in text
    assert page.problems == []


# Every attribute on the page that a browser would follow or load as a javascript: URL.
JAVASCRIPT_URLS = """() => [...document.querySelectorAll('*')].flatMap(el =>
    [...el.attributes]
        .filter(a => a.value.replace(/[\\x00-\\x20]/g, '').toLowerCase().startsWith('javascript:'))
        .map(a => el.tagName + ' ' + a.name + '=' + a.value))"""


def test_template_syntax_and_javascript_urls_show_literally(page: Any) -> None:
    card = page.locator("#scenarios > details.scenario", has_text="hostile-text")
    card.locator("summary").first.click()
    card.locator("details.transcript > summary").click()
    # In each place untrusted text reaches: the name, description, tags, the model's text,
    # the tool arguments and results, the final answer, the transcript; and in the diff.
    change = page.locator("#diff .change", has_text="hostile-text")
    places = {
        "name": card.locator("summary .name"),
        "description": card.locator(".desc"),
        "tags": card.locator(".ident"),
        "model text": card.locator(".reply").first,
        "tool arguments": card.locator("pre.args").first,
        "tool result": card.locator("pre.result").first,
        "final answer": card.locator(".final pre.text"),
        "transcript": card.locator("details.transcript"),
        "diff trajectory": change.locator("ol.traj"),
        "diff answer": change.locator(".sides"),
    }
    for where, locator in places.items():
        text = locator.inner_text()
        assert HOSTILE["template"] in text, where
        assert "sum=49" not in text and "loop1" not in text, where
        assert HOSTILE["md_link"] in text or where in ("name",), where
    assert HOSTILE["js_url"] in card.locator(".desc").inner_text()
    assert page.evaluate(JAVASCRIPT_URLS) == []
    # Following every link on the page still runs nothing.
    for link in page.locator("a").all():
        link.dispatch_event("click")
    page.wait_for_timeout(200)
    assert page.evaluate("typeof window.__pwned") == "undefined"
    assert page.problems == []


def test_csp_blocks_script_that_escaping_would_have_missed(page: Any) -> None:
    # The second wall: even an inline script that got into the DOM does not run.
    page.evaluate(
        """() => {
            const s = document.createElement('script');
            s.textContent = 'window.__csp_bypassed = 1';
            document.body.appendChild(s);
            const img = document.createElement('div');
            img.innerHTML = '<img src=x onerror="window.__csp_bypassed = 2">';
            document.body.appendChild(img);
        }"""
    )
    page.wait_for_timeout(200)
    assert page.evaluate("typeof window.__csp_bypassed") == "undefined"


# -- a long run: folds, a header that stays in view, named lanes --------------------------------

LONG_RUN = """\
name: long-run
input: Check every city.
agent: {max_iterations: 100}
tools:
  lookup:
    parameters: {city: str}
    returns: "{{ args.city }}: sunny"
    latency: 0.5
  forecast:
    parameters: {city: str}
    returns: "{{ args.city }}: rain tomorrow"
    latency: 0.25
llm:
  script:
"""


@pytest.fixture(scope="module")
def long_report(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from harness._results import build_results
    from harness.scenario import run_scenario

    folder = tmp_path_factory.mktemp("long")
    steps = [
        f"    - tool_calls: [{{lookup: {{city: c{i}}}}}, {{forecast: {{city: c{i}}}}}]\n"
        for i in range(30)
    ]
    path = folder / "long.scenario.yaml"
    path.write_text(LONG_RUN + "".join(steps) + "    - content: All sunny.\n", encoding="utf-8")
    # In a thread of its own: the browser's event loop may already run in this one.
    with ThreadPoolExecutor(1) as pool:
        result = pool.submit(run_scenario, path).result()
    assert result.termination == "completed" and result.iterations == 62
    out = folder / "report.html"
    write_html(out, build_results([result]))
    return out


@pytest.fixture
def long_page(long_report: Path, browser: Any) -> Iterator[Any]:
    context = browser.new_context(viewport={"width": 1280, "height": 700})
    page = context.new_page()
    page.goto(long_report.as_uri() + "#s1", wait_until="load")
    try:
        yield page
    finally:
        context.close()


def test_a_long_run_folds_its_alike_iterations_and_unfolds_on_a_click(long_page: Any) -> None:
    page = long_page
    shown = "tbody.iter:not(.folded)"
    # 30 alike rounds of (request, parallel tools): the first and last stay, 28 fold.
    assert page.locator("#s1 tbody.iter").count() == 62
    assert page.locator(f"#s1 {shown}").count() == 6  # 2 + 2 + the answer's 2
    button = page.locator("#s1 button.unfold")
    assert button.count() == 1
    # Alike, not identical: the fold says whose arguments differ in it.
    assert button.inner_text() == (
        "▸ 56 more iterations alike (3\u201358), with other arguments: show them"
    )
    assert page.locator("#s1 tbody.fold .fold-args").all_inner_texts() == [
        'lookup: 28 different arguments, {"city": "c1"} … {"city": "c28"}',
        'forecast: 28 different arguments, {"city": "c1"} … {"city": "c28"}',
    ]
    card_height = page.eval_on_selector("#s1", "card => card.offsetHeight")
    assert card_height < 1500
    button.click()
    assert page.locator(f"#s1 {shown}").count() == 62
    assert page.locator("#s1 tbody.fold").evaluate("fold => fold.hidden")


def test_an_open_cards_header_stays_visible_below_the_filter_bar(long_page: Any) -> None:
    page = long_page
    page.locator("#s1 button.unfold").click()
    # Scroll into the middle of the card's timeline.
    page.locator("#s1 tbody.iter").nth(40).scroll_into_view_if_needed()
    bar = page.eval_on_selector("#filters", "e => e.getBoundingClientRect().bottom")
    header = page.eval_on_selector("#s1 > summary", "e => e.getBoundingClientRect().toJSON()")
    assert header["top"] >= bar - 1  # not under the filter bar
    assert header["bottom"] <= 700 and header["top"] < 300  # in view, at the top
    # And what is under it is what the header covers, not the other way round.
    top_element = page.evaluate(
        "([x, y]) => document.elementFromPoint(x, y).closest('summary') !== null",
        [header["left"] + 40, (header["top"] + header["bottom"]) / 2],
    )
    assert top_element


def test_parallel_lanes_are_named_by_their_tools(long_page: Any) -> None:
    names = long_page.eval_on_selector_all(
        "#s1 tr.item.tools .lanes",
        "all => all.map(l => Array.from(l.querySelectorAll('span')).map(s => s.textContent))",
    )
    assert len(names) == 30 and all(pair == ["lookup", "forecast"] for pair in names)
    titles = long_page.eval_on_selector_all(
        "#s1 tr.item.tools svg.track title", "all => all.slice(0, 2).map(t => t.textContent)"
    )
    assert titles == ["lookup", "forecast"]
    # In the first plan, the lane labels sit beside the bars, in the bars' order.
    first = long_page.locator("#s1 tr.item.tools").first
    assert first.locator(".lanes").is_visible()
