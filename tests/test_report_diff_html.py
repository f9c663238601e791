"""The baseline diff as a reader sees it in the HTML report: every category, parsed.

The diff's data is tested in test_report_diff.py; here the rendered page must show, for
each category, the values a person compares: old and new, the -/+ trajectory lines, both
answers with the changed words marked, and the ids.
"""

from __future__ import annotations

import logging
from html.parser import HTMLParser

import pytest
from report_samples import HOSTILE, MARKUP, sample_baseline, sample_results

from harness._baseline import ScenarioChange, TrajectoryChange, TrajectoryOp
from harness.report import BaselineDiff, diff_results, render_html
from harness.report._markup import word_diff
from harness.report._views import Limits

# Elements that never have children or an end tag.
VOID = {"meta", "br", "img", "input", "hr", "link", "area", "base", "col", "embed", "source"}


class Node:
    """An element of the parsed page: tag, attributes and children (nodes and text)."""

    def __init__(self, tag: str, attrs: dict[str, str | None], parent: Node | None) -> None:
        self.tag = tag
        self.attrs = attrs
        self.parent = parent
        self.children: list[Node | str] = []

    @property
    def classes(self) -> list[str]:
        return (self.attrs.get("class") or "").split()

    def text(self) -> str:
        """The text a reader sees in this element (entities decoded)."""
        return "".join(c if isinstance(c, str) else c.text() for c in self.children)

    def all(self, tag: str | None = None, cls: str | None = None) -> list[Node]:
        """Every element below this one, in document order, with this tag and/or class."""
        found: list[Node] = []
        for child in self.children:
            if isinstance(child, Node):
                if (tag is None or child.tag == tag) and (cls is None or cls in child.classes):
                    found.append(child)
                found.extend(child.all(tag, cls))
        return found

    def one(self, tag: str | None = None, cls: str | None = None) -> Node:
        """The only element below this one with this tag and/or class."""
        found = self.all(tag, cls)
        assert len(found) == 1, (tag, cls, len(found))
        return found[0]

    def by_id(self, id_: str) -> Node:
        (found,) = [n for n in self.all() if n.attrs.get("id") == id_]
        return found


class Tree(HTMLParser):
    """The page as a tree of Nodes."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.root = Node("#root", {}, None)
        self.current = self.root

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        node = Node(tag, dict(attrs), self.current)
        self.current.children.append(node)
        if tag not in VOID:
            self.current = node

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.current.children.append(Node(tag, dict(attrs), self.current))

    def handle_endtag(self, tag: str) -> None:
        node: Node | None = self.current
        while node is not None and node.tag != tag:
            node = node.parent
        assert node is not None and node.parent is not None, f"stray </{tag}>"
        self.current = node.parent

    def handle_data(self, data: str) -> None:
        self.current.children.append(data)


def parse(html: str) -> Node:
    tree = Tree()
    tree.feed(html)
    tree.close()
    assert tree.current is tree.root, "unclosed elements"
    return tree.root


def squash(text: str) -> str:
    return " ".join(text.split())


@pytest.fixture(autouse=True)
def _quiet_loop_logs(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.ERROR, logger="harness")


@pytest.fixture(scope="module")
def rendered() -> tuple[Node, BaselineDiff, dict[str, str]]:
    """The sample report against its baseline (every category), parsed; and id -> anchor."""
    logging.getLogger("harness").setLevel(logging.ERROR)
    results = sample_results()
    diff = diff_results(sample_baseline(), results, source="reports/baseline.json")
    assert {k for k, n in diff.counts().items() if n} == {
        "regressions",
        "fixed",
        "changed",
        "added",
        "removed",
    }
    page = parse(render_html(results, diff))
    # Where each scenario's card is: the links in the diff must lead there.
    anchors = {}
    for card in page.all("details", "scenario"):
        shown = card.one("code", "sid").text()
        (sid,) = [s.id for s in results.scenarios if shown.startswith(s.id[:300])]
        anchors[sid] = card.attrs["id"] or ""
    return page, diff, anchors


def section(page: Node) -> Node:
    return page.by_id("diff")


def category(page: Node, name: str) -> Node:
    """The element right after a category's heading (its table, list or change blocks)."""
    heading = section(page).by_id(f"diff-{name}")
    siblings = [c for c in heading.parent.children if isinstance(c, Node)]  # type: ignore[union-attr]
    return siblings[siblings.index(heading) + 1]


def change(page: Node, name: str) -> Node:
    (block,) = [
        b for b in section(page).all("div", "change") if b.one("h4").one("a").text() == name
    ]
    return block


def fields(block: Node) -> dict[str, tuple[str, str]]:
    """A change's field table: field -> (baseline cell, now cell), as shown."""
    rows = block.one("table", "fields").one("tbody").all("tr")
    cells = [[squash(td.text()) for td in row.all("td")] for row in rows]
    return {c[0]: (c[1], c[2]) for c in cells}


def status_rows(table: Node) -> list[list[str]]:
    return [[squash(td.text()) for td in tr.all("td")] for tr in table.one("tbody").all("tr")]


# -- categories --------------------------------------------------------------------------


def test_counts_at_the_top(rendered: tuple[Node, BaselineDiff, dict[str, str]]) -> None:
    page, diff, _ = rendered
    chips = [squash(a.text()) for a in section(page).one(cls="chips").all("a")]
    assert chips == ["1 regression", "1 fixed", "4 changed", "1 added", "1 removed"]
    meta = squash(section(page).one("p", "meta").text())
    assert meta == (
        "baseline reports/baseline.json · run 2024-12-20T09:30:00+00:00 · "
        f"{diff.compared} compared, {diff.unchanged} unchanged"
    )
    header = page.one("a", "diffcard")
    assert header.attrs["href"] == "#diff"
    assert (header.one(cls="n").text(), header.one(cls="l").text()) == ("1", "regression")


def test_regressions_show_old_and_new_status_unmet_expectations_and_id(
    rendered: tuple[Node, BaselineDiff, dict[str, str]],
) -> None:
    page, _, anchors = rendered
    sid = "scenarios/hallucinated-tool-name.scenario.yaml::hallucinated-tool-name"
    table = category(page, "regressions")
    assert [th.text() for th in table.all("th")] == [
        "scenario",
        "baseline",
        "now",
        "unmet expectations",
    ]
    assert status_rows(table) == [
        [f"hallucinated-tool-name{sid}", "passed completed", "failed completed", "llm_calls"]
    ]
    link = table.one("a")
    assert link.attrs["href"] == f"#{anchors[sid]}"
    assert table.one(cls="sid").text() == sid


def test_fixed_show_old_and_new_status_and_termination(
    rendered: tuple[Node, BaselineDiff, dict[str, str]],
) -> None:
    page, _, anchors = rendered
    sid = "scenarios/rate-limited.scenario.yaml::rate-limited"
    table = category(page, "fixed")
    assert status_rows(table) == [
        [f"rate-limited{sid}", "failed completed", "passed llm_error", "none"]
    ]
    assert table.one("a").attrs["href"] == f"#{anchors[sid]}"
    badges = [(b.classes, b.text()) for b in table.all("span", "badge")]
    assert badges == [
        (["badge", "st-failed"], "failed"),
        (["badge", "t-completed"], "completed"),
        (["badge", "st-passed"], "passed"),
        (["badge", "t-llm_error"], "llm_error"),
    ]


def test_changed_lists_each_scenario_with_the_fields_that_differ(
    rendered: tuple[Node, BaselineDiff, dict[str, str]],
) -> None:
    page, diff, anchors = rendered
    blocks = section(page).all("div", "change")
    shown = [b.one("h4").one("span", "muted").text() for b in blocks]
    assert shown == [", ".join(c.fields) for c in diff.changed]
    assert [b.one("h4").one("a").attrs["href"] for b in blocks] == [
        f"#{anchors[c.id]}" for c in diff.changed
    ]


def test_changed_termination_and_status_old_and_new(
    rendered: tuple[Node, BaselineDiff, dict[str, str]],
) -> None:
    page, _, _ = rendered
    assert fields(change(page, "rate-limited")) == {
        "status": ("failed", "passed"),
        "termination": ("completed", "llm_error"),
        "iterations": ("4", "3 -1"),
    }


def test_iteration_and_llm_call_deltas(
    rendered: tuple[Node, BaselineDiff, dict[str, str]],
) -> None:
    page, _, _ = rendered
    assert fields(change(page, "weather-and-restaurants")) == {
        "iterations": ("4", "3 -1"),
        "LLM calls": ("4", "3 -1"),
    }
    regressed = change(page, "hallucinated-tool-name")
    assert fields(regressed) == {
        "status": ("passed", "failed"),
        "iterations": ("4", "6 +2"),
        "LLM calls": ("2", "3 +1"),
    }
    assert [d.text() for d in regressed.all("span", "delta")] == ["+2", "+1"]


MINUS = "\u2212"  # what the page puts before a removed plan


def trajectory_lines(block: Node) -> list[tuple[str, str]]:
    return [(li.attrs.get("class") or "", li.text()) for li in block.one("ol", "traj").all("li")]


def test_trajectory_diff_shows_minus_and_plus_lines(
    rendered: tuple[Node, BaselineDiff, dict[str, str]],
) -> None:
    page, _, _ = rendered
    assert trajectory_lines(change(page, "weather-and-restaurants")) == [
        ("eq", '  get_weather {"city":"San Francisco"}'),
        ("del", MINUS + ' find_restaurants {"location":"San Francisco"}'),
        ("del", MINUS + ' get_weather {"city":"Oakland"}'),
        (
            "ins",
            '+ find_restaurants {"location":"San Francisco"} || get_weather {"city":"Oakland"}',
        ),
    ]
    assert trajectory_lines(change(page, "hallucinated-tool-name")) == [
        ("ins", '+ get_wether {"city":"Rome"} [unknown_tool]'),
        ("eq", '  get_weather {"city":"Rome"}'),
    ]


def test_long_unchanged_runs_of_plans_are_folded() -> None:
    plans = [f'search_docs {{"query":"q{i}"}}' for i in range(6)]
    change_ = ScenarioChange(
        id="s.yaml::s",
        name="s",
        tool_calls=TrajectoryChange(
            old=plans,
            new=[*plans, "echo {}"],
            ops=[
                TrajectoryOp(op="equal", old=plans, new=plans),
                TrajectoryOp(op="insert", new=["echo {}"]),
            ],
        ),
    )
    html = render_html(sample_results([]), BaselineDiff(compared=1, changed=[change_]))
    assert trajectory_lines(section(parse(html)).one("div", "change")) == [
        ("eq", f"  {plans[0]}"),
        ("skip", "  … 4 unchanged plans …"),
        ("eq", f"  {plans[-1]}"),
        ("ins", "+ echo {}"),
    ]


def sides(block: Node) -> tuple[Node, Node]:
    old, new = block.one(cls="sides").all("div", "side")
    assert (old.one(cls="side-h").text(), new.one(cls="side-h").text()) == ("baseline", "now")
    return old, new


def test_final_answer_diff_shows_both_answers_with_changed_words_marked(
    rendered: tuple[Node, BaselineDiff, dict[str, str]],
) -> None:
    page, _, _ = rendered
    old, new = sides(change(page, "weather-and-restaurants"))
    # The whole of each answer, as written...
    assert old.one("pre").text() == "72F and sunny; Zuni Cafe, Tartine and Nopa are close by."
    assert new.one("pre").text() == (
        "It is 72F and sunny in San Francisco; try Zuni Cafe, Tartine or Nopa."
    )
    # ... with the words only one side has marked, on that side only.
    assert [d.text() for d in old.all("del")] == ["and ", "are close by"]
    assert old.all("ins") == []
    assert [i.text() for i in new.all("ins")] == ["It is ", "in San Francisco", "try ", "or "]
    assert new.all("del") == []


def test_final_answer_diff_with_an_error_on_one_side(
    rendered: tuple[Node, BaselineDiff, dict[str, str]],
) -> None:
    page, _, _ = rendered
    old, new = sides(change(page, "rate-limited"))
    assert old.one("pre").text() == "It is 72F in Berlin."
    assert [m.text() for m in new.all(cls="minor")] == ["error"]
    error = new.one("pre", "json").text()
    assert '"status": 429' in error and "Rate limit reached for gpt-4o-mini" in error
    assert new.all("ins") == [] and old.all("del") == []  # no words to compare with an error


def test_hostile_answers_are_marked_word_by_word_and_stay_text(
    rendered: tuple[Node, BaselineDiff, dict[str, str]],
) -> None:
    page, diff, _ = rendered
    (hostile,) = [c for c in diff.changed if c.id.startswith("scenarios/hostile-text")]
    assert hostile.final is not None
    old, new = sides(section(page).all("div", "change")[diff.changed.index(hostile)])
    assert old.one("pre").text() == hostile.final.old["content"]
    assert new.one("pre").text() == hostile.final.new["content"]
    assert old.all("del")[0].text() == "Earlier "
    assert new.all("ins")[0].text() == "Done "
    # No element but our own marks inside the answers.
    assert {n.tag for n in old.one("pre").all()} == {"del"}
    assert {n.tag for n in new.one("pre").all()} <= {"ins"}


def test_added_and_removed_show_ids_and_status(
    rendered: tuple[Node, BaselineDiff, dict[str, str]],
) -> None:
    page, _, anchors = rendered
    added = category(page, "added")
    sid = "scenarios/nothing-to-do.scenario.yaml::nothing-to-do"
    assert [squash(li.text()) for li in added.all("li")] == [f"nothing-to-do passed empty {sid}"]
    assert added.one("a").attrs["href"] == f"#{anchors[sid]}"
    removed = category(page, "removed")
    gone = "scenarios/greeting.scenario.yaml::greeting"
    assert [squash(li.text()) for li in removed.all("li")] == [
        f"greeting was passed completed {gone}"
    ]
    assert removed.all("a") == []  # not in this run: nothing to link to


def test_not_run_is_listed_apart_from_removed() -> None:
    """A narrowed run lists what it left out as not run, collapsed, never as removed."""
    results = sample_results()
    baseline = sample_baseline()
    gone = "scenarios/greeting.scenario.yaml::greeting"
    diff = diff_results(baseline, results, not_run={gone})
    assert diff.removed == [] and [r.id for r in diff.not_run] == [gone]
    page = parse(render_html(results, diff))
    assert [n for n in section(page).all() if n.attrs.get("id") == "diff-removed"] == []
    meta = squash(section(page).one("p", "meta").text())
    assert meta.endswith("unchanged, 1 not run"), meta
    block = section(page).by_id("diff-not-run")
    assert block.tag == "details" and "open" not in block.attrs
    assert squash(block.one("summary").text()).startswith("1 not run")
    assert [squash(li.text()) for li in block.all("li")] == [
        f"greeting was passed completed {gone}"
    ]


# -- word_diff ----------------------------------------------------------------------------


def marks(html: str) -> list[tuple[str, str]]:
    node = parse(html)
    return [(n.tag, n.text()) for n in node.all() if n.tag in ("ins", "del")]


def test_word_diff_escapes_every_segment() -> None:
    old = f"keep {HOSTILE['img']} same"
    new = f"keep {HOSTILE['script']} same"
    left, right = word_diff(old, new, 1000)
    assert left is not None and right is not None
    for key in MARKUP:
        assert HOSTILE[key] not in left and HOSTILE[key] not in right
    assert parse(str(left)).text() == old
    assert parse(str(right)).text() == new
    assert {n.tag for n in parse(str(left)).all()} == {"del"}
    assert marks(str(left))[0][1].startswith("<img")


def test_word_diff_only_for_two_texts() -> None:
    assert word_diff(None, "text", 100) == (None, None)
    assert word_diff("text", {"a": 1}, 100) == (None, None)
    same, again = word_diff("no change here", "no change here", 100)
    assert str(same) == str(again) == "no change here"


def test_word_diff_cost_is_capped_for_long_answers() -> None:
    # Only the shown head is compared, with the usual visible marker for the rest...
    old, new = "alpha " * 5000, "alpha " * 4000 + "beta " * 1000
    left, right = word_diff(old, new, Limits.diff)
    assert "more characters not shown" in str(left) and "more characters not shown" in str(right)
    assert marks(str(left)) == [] and marks(str(right)) == []  # the heads are the same
    # ... and two long, unrelated heads have their middle marked whole, not word by word.
    a = " ".join(f"a{i % 7}" for i in range(300))
    b = " ".join(f"b{i % 5}" for i in range(300))
    left, right = word_diff(f"Start {a} end", f"Start {b} end", 10_000)
    assert marks(str(left)) == [("del", a + " ")]
    assert marks(str(right)) == [("ins", b + " ")]
