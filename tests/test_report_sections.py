"""A section of the report from a plugin (the hook ``harness_report_sections``): found the
way plugins are found, shown in the terminal summary of ``harness run``, in the Markdown
summary and in the HTML report (parsed, and in a real browser), its text never markup; a
plugin that raises is one line naming it, and the reports are still written. The budget,
harness's own section, comes from one Section through the same hook in all three media.
"""

from __future__ import annotations

import re
import sys
from html.parser import HTMLParser
from pathlib import Path

import pytest
from scenario_texts import PASSING, SESSION_TESTS
from test_docs_plugins import _files

from harness import _plugins as plugins
from harness._results import Results, load_results
from harness._runbudget import RunBudget
from harness.plugin import Section, Table
from harness.report._html import render_html
from harness.report._markdown import render_markdown
from harness.report._sections import gather_sections, text_section_lines

pytestmark = SESSION_TESTS

HOSTILE = "<script>window.__pwned = 1</script> [x](javascript:alert(1)) **bold** @admin"

# A project plugin whose section carries hostile text in each kind of block.
PLUGIN = f'''\
from harness.plugin import Section, Table, hookimpl


@hookimpl
def harness_report_sections(results):
    rows = [[s.id, str(s.llm_calls)] for s in results.scenarios]
    return [
        Section("Model calls", [
            "Calls per scenario. {HOSTILE}",
            ["first", "{HOSTILE}"],
            Table(["scenario", "calls"], rows),
        ]),
    ]
'''

BROKEN = """\
from harness.plugin import hookimpl


@hookimpl
def harness_report_sections(results):
    raise KeyError("cost")
"""

WRONG = """\
from harness.plugin import hookimpl


@hookimpl
def harness_report_sections(results):
    return {"title": "Cost"}
"""


@pytest.fixture
def project(cli_project):
    """A project with one passing scenario; ``project.use(name=text, ...)`` writes plugin
    modules and lists them in ``[tool.harness] plugins``."""
    (cli_project.path / "scenarios" / "greet.scenario.yaml").write_text(PASSING)
    added: list[str] = []

    def use(**modules: str) -> None:
        for name, text in modules.items():
            (cli_project.path / f"{name}.py").write_text(text)
            added.append(name)
        listed = ", ".join(f'"{name}"' for name in modules)
        (cli_project.path / "pyproject.toml").write_text(
            f"[project]\nname = 'demo'\n\n[tool.harness]\nplugins = [{listed}]\n"
        )

    cli_project.use = use
    yield cli_project
    for name in added:
        sys.modules.pop(name, None)


class _Panel(HTMLParser):
    """The text of the elements of one ``<section id=...>`` of a page, in order, and the
    tags inside it."""

    def __init__(self, anchor: str) -> None:
        super().__init__()
        self.anchor, self.depth = anchor, 0
        self.items: list[tuple[str, str]] = []
        self.tags: list[str] = []
        self._tag = ""

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if self.depth == 0 and tag == "section" and ("id", self.anchor) in attrs:
            self.depth = 1
        elif self.depth:
            self.depth += tag == "section"
            self.tags.append(tag)
            self._tag = tag

    def handle_endtag(self, tag: str) -> None:
        if self.depth and tag == "section":
            self.depth -= 1

    def handle_data(self, data: str) -> None:
        if self.depth and data.strip():
            self.items.append((self._tag, data.strip()))


def panel(html: str, anchor: str) -> _Panel:
    parsed = _Panel(anchor)
    parsed.feed(html)
    return parsed


def _check_model_calls_panel(html: str) -> None:
    """The plugin's section, as the HTML report shows it: escaped, nothing cut."""
    found = panel(html, "section-model-calls")
    assert found.items == [
        ("h2", "Model calls"),
        ("p", f"Calls per scenario. {HOSTILE}"),
        ("li", "first"),
        ("li", HOSTILE),
        ("th", "scenario"),
        ("th", "calls"),
        ("td", "scenarios/greet.scenario.yaml::greet"),
        ("td", "2"),
    ]
    assert "script" not in found.tags and "a" not in found.tags
    assert "&lt;script&gt;window.__pwned = 1&lt;/script&gt;" in html


@pytest.mark.hooks("harness_report_sections")
def test_a_plugins_section_shows_in_the_terminal_markdown_and_html(project):
    project.use(model_calls_plugin=PLUGIN)
    status, out = project.run_harness("plugins")
    assert "model_calls_plugin  (pyproject.toml [tool.harness] plugins)" in out.splitlines()
    assert "  hooks: harness_report_sections" in out.splitlines()
    status, out = project.run_harness(
        "run", "--json", "r.json", "--html", "r.html", "--markdown", "r.md"
    )
    assert status == 0, out
    lines = out.splitlines()
    start = lines.index("Model calls:")
    assert lines[start + 1 : start + 6] == [
        f"  Calls per scenario. {HOSTILE}",
        "  first",
        f"  {HOSTILE}",
        "  scenario                              calls",
        "  scenarios/greet.scenario.yaml::greet  2",
    ]
    markdown = (project.path / "r.md").read_text()
    assert (
        "\n### Model calls\n\n"
        f"`Calls per scenario. {HOSTILE}`\n\n"
        f"- `first`\n- `{HOSTILE}`\n\n"
        "| `scenario` | `calls` |\n| --- | --- |\n"
        "| `scenarios/greet.scenario.yaml::greet` | `2` |\n"
    ) in markdown
    _check_model_calls_panel((project.path / "r.html").read_text())
    # harness report renders it again from results.json, with the same project's plugins.
    status, out = project.run_harness("report", "r.json", "-o", "again.html")
    assert status == 0, out
    _check_model_calls_panel((project.path / "again.html").read_text())


def test_the_docs_example_section_shows_in_every_medium(cli_project):
    """docs/plugins.md's shop/report.py, in the page's own project, as written."""
    for name, text in _files().items():
        if not name.startswith("packaged/"):
            path = cli_project.path / name
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text)
    (cli_project.path / "shop" / "__init__.py").write_text("")
    try:
        status, out = cli_project.run_harness("run", "--html", "r.html", "--markdown", "r.md")
    finally:
        for name in [m for m in sys.modules if m == "shop" or m.startswith("shop.")]:
            del sys.modules[name]
    assert status == 0, out
    row = "scenarios/kettle.scenario.yaml::kettle  2 check_stock, 1 reserve"
    assert "Tool calls:\n  Every call the model asked for, those not run included.\n" in out
    assert f"  {row}" in out
    markdown = (cli_project.path / "r.md").read_text()
    assert "### Tool calls" in markdown
    assert "| `scenarios/kettle.scenario.yaml::kettle` | `2 check_stock, 1 reserve` |" in markdown
    found = panel((cli_project.path / "r.html").read_text(), "section-tool-calls")
    assert ("td", "2 check_stock, 1 reserve") in found.items


@pytest.mark.hooks("harness_report_sections")
def test_a_plugin_that_raises_is_one_line_naming_it_and_the_reports_are_written(project):
    project.use(broken_sections=BROKEN, model_calls_plugin=PLUGIN)
    status, out = project.run_harness(
        "run", "--json", "r.json", "--html", "r.html", "--markdown", "r.md"
    )
    assert status == 3, out  # a report error
    error = (
        "report error: plugin broken_sections: harness_report_sections raised KeyError: "
        "'cost'; its sections are left out"
    )
    assert error in out.splitlines()
    assert "Traceback" not in out and "broken_sections.py" not in out
    # Every report is written, with the other plugin's section.
    assert "results: r.json, r.html, r.md" in out
    assert "### Model calls" in (project.path / "r.md").read_text()
    _check_model_calls_panel((project.path / "r.html").read_text())
    assert load_results(project.path / "r.json").summary.total == 1
    # harness report: the same line on stderr, the report written, exit status 3.
    status, out = project.run_harness("report", "r.json", "-o", "again.html")
    assert status == 3, out
    assert f"harness report: error: {error.removeprefix('report error: ')}" in out
    assert "wrote again.html (1 scenarios)" in out
    _check_model_calls_panel((project.path / "again.html").read_text())


def test_a_plugin_returning_no_section_is_named(project):
    project.use(wrong_sections=WRONG)
    status, out = project.run_harness("run", "--markdown", "r.md")
    assert status == 3, out
    assert (
        "report error: plugin wrong_sections: harness_report_sections returned a dict, not a "
        "harness.plugin.Section, a list of them or None; its sections are left out"
    ) in out.splitlines()
    assert (project.path / "r.md").is_file()


def test_an_installed_plugins_section_is_found_through_its_entry_point(
    cli_project, tmp_path, monkeypatch
):
    site = tmp_path / "site"
    site.mkdir()
    (site / "installed_sections.py").write_text(PLUGIN)
    info = site / "installed_sections-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: installed-sections\nVersion: 1.0\n"
    )
    (info / "entry_points.txt").write_text("[harness]\nmodel-calls = installed_sections\n")
    monkeypatch.syspath_prepend(str(site))
    plugins.discovery.reset()
    (cli_project.path / "scenarios" / "greet.scenario.yaml").write_text(PASSING)
    try:
        status, out = cli_project.run_harness("run", "--json", "r.json")
        assert status == 0, out
        assert "Model calls:" in out.splitlines()
        status, out = cli_project.run_harness("report", "r.json", "-o", "r.html")
    finally:
        sys.modules.pop("installed_sections", None)
    assert status == 0, out
    _check_model_calls_panel((cli_project.path / "r.html").read_text())


# -- the built-in budget section: one Section, three media ---------------------------------


def _with_budget(not_run: int) -> Results:
    ids = [f"scenarios/w{i}.scenario.yaml::w{i}" for i in range(not_run)]
    budget = RunBudget(max_requests=5, requests=6, cost=0.9, reached=True, not_run=ids)
    return Results(scenarios=[], budget=budget)


def test_the_budget_is_one_section_rendered_by_the_terminal_markdown_and_html():
    results = _with_budget(25)
    sections = gather_sections(results).sections
    assert [s.title for s in sections] == ["Budget"]
    sentence = (
        "budget (--max-requests 5): 6 request(s) made, $0.9000 spent: reached; 25 scenario "
        "run(s) not run for the budget (not passed: exit 1)"
    )
    lines = text_section_lines(sections)
    assert lines[:3] == [
        "Budget:",
        f"  {sentence}",
        "  not run for the budget: scenarios/w0.scenario.yaml::w0",
    ]
    assert lines[-1] == "  ... and 5 more (the HTML report lists every one)"  # 20 shown
    markdown = render_markdown(results, sections=sections)
    assert f"\n### Budget\n\n`{sentence}`\n\n- `not run for the budget: scenarios/w0" in markdown
    assert markdown.count("- `not run for the budget:") == 25  # at most 50 listed
    found = panel(render_html(results, sections=sections), "section-budget")
    assert found.items[:2] == [("h2", "Budget"), ("p", sentence)]
    assert len([item for item in found.items if item[0] == "li"]) == 25  # every one


def test_the_renderers_ask_the_plugins_when_not_given_sections():
    results = _with_budget(1)
    assert "### Budget" in render_markdown(results)
    assert panel(render_html(results), "section-budget").items[0] == ("h2", "Budget")


def test_the_built_in_sections_are_blocked_by_name(monkeypatch):
    monkeypatch.setenv("HARNESS_DISABLE_PLUGINS", "harness.report.summary")
    plugins.discovery.reset()
    assert gather_sections(_with_budget(1)).sections == ()


def test_a_sections_text_is_literal_in_markdown_and_the_terminal():
    section = Section(
        "Cost `|` <b>*now*</b>",
        ["a `tick` and | pipe", ["x\x1b[2Jy"], Table(["a|b"], [["`c`"]])],
    )
    from harness.report._markdown import code
    from harness.report._sections import markdown_section_lines

    lines = markdown_section_lines([section], code)
    assert lines[1] == r"### Cost \`\|\` \<b\>\*now\*\<\/b\>"
    assert "``a `tick` and | pipe``" in lines
    assert r"| `a\|b` |" in lines and r"| `` `c` `` |" in lines
    assert text_section_lines([section])[2] == r"  x\x1b[2Jy"


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda: Section("", []), "title must be a non-empty str"),
        (lambda: Section("T", [3]), "a str (a paragraph), a list of str or a Table, not int"),
        (lambda: Section("T", [["a", 1]]), "a Section's list must hold str only, not int"),
        (lambda: Table(["a", "b"], [["1"]]), "a Table row has 1 cell(s), its columns 2"),
    ],
)
def test_a_malformed_section_says_what_is_wrong(make, message):
    with pytest.raises(ValueError, match=re.escape(message)):
        make()


def test_the_section_shows_as_text_in_a_real_browser(project):
    from chromium import open_browser

    project.use(model_calls_plugin=PLUGIN)
    status, out = project.run_harness("run", "--html", "r.html")
    assert status == 0, out
    report = Path(project.path / "r.html")
    with open_browser() as browser:
        page = browser.new_page()
        problems: list[str] = []
        page.on("pageerror", lambda exc: problems.append(str(exc)))
        page.goto(report.as_uri(), wait_until="load")
        section = page.locator("#section-model-calls")
        assert section.is_visible()
        assert section.locator("h2").inner_text() == "Model calls"
        assert section.locator("li").nth(1).inner_text() == HOSTILE
        assert page.evaluate("typeof window.__pwned") == "undefined"
        assert page.evaluate("document.querySelectorAll('a[href^=javascript]').length") == 0
        assert problems == []


LEAKY = """\
import os

from harness.plugin import Section, hookimpl


@hookimpl
def harness_report_sections(results):
    key = os.environ["OPENAI_API_KEY"]
    return Section(f"Key {key}", [f"the key: {key}", [key], Table(["k"], [[key]])])


from harness.plugin import Table  # noqa: E402
"""


def test_a_secret_in_a_section_is_masked_in_every_medium(project, monkeypatch):
    secret = "sk-test-harness-SectionCanary0123456789"
    monkeypatch.setenv("OPENAI_API_KEY", secret)
    project.use(leaky_sections=LEAKY)
    status, out = project.run_harness("run", "--html", "r.html", "--markdown", "r.md")
    assert status == 0, out
    assert "Key " in out and "the key: " in out
    for text in (out, (project.path / "r.md").read_text(), (project.path / "r.html").read_text()):
        assert secret not in text and "SectionCanary" not in text


def test_harness_merge_shows_the_sections_of_the_merged_results(project):
    project.use(model_calls_plugin=PLUGIN)
    other = PASSING.replace("name: greet", "name: other")
    (project.path / "scenarios" / "other.scenario.yaml").write_text(other)
    for part in ("1/2", "2/2"):
        status, out = project.run_harness("run", "--shard", part, "--json", f"s{part[0]}.json")
        assert status == 0, out
    status, out = project.run_harness("merge", "s1.json", "s2.json", "--html", "m.html")
    assert status == 0, out
    lines = out.splitlines()
    table = lines[lines.index("Model calls:") + 4 :][:3]
    assert table == [
        "  scenario                              calls",
        "  scenarios/greet.scenario.yaml::greet  2",
        "  scenarios/other.scenario.yaml::other  2",
    ]
    found = panel((project.path / "m.html").read_text(), "section-model-calls")
    assert [text for tag, text in found.items if tag == "td"] == [
        "scenarios/greet.scenario.yaml::greet",
        "2",
        "scenarios/other.scenario.yaml::other",
        "2",
    ]
