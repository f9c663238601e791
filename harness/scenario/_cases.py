"""``cases:``: one scenario run once per case, as pytest's parametrize does.

A case is a mapping (an item of an inline list, a line of a ``.jsonl`` file, a row of a
``.csv`` file beside the scenario). Its keys that name scenario keys (``input``,
``expect``, ...) are merged over the scenario's (docs/scenarios.md#cases); every key is
``case.KEY`` in the scenario's texts. A text that reads only ``case`` is filled in when
the case is made (a text that is exactly ``{{ case.KEY }}`` takes the value itself, a
number stays a number); a stub's template that also reads ``args``, ``call`` or ``faker``
gets ``case`` when it renders. Each case is its own scenario, id ``path::name[case-id]``.
"""

from __future__ import annotations

import csv
import difflib
import io
import json
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from jinja2 import TemplateError

from harness._errors import HarnessError, ScenarioError
from harness._files import read_bounded
from harness._project import display_path
from harness.scenario._issues import Issue
from harness.scenario._overlay import overlay
from harness.scenario._schema import Scenario
from harness.scenario._template_bounds import render
from harness.scenario._templates import TEMPLATE_MARKERS, case_fields, parse_template
from harness.scenario._yamlsource import Located, Path_, dotted

__all__ = ["Case", "load_cases", "one_scenario", "read_cases"]

# Keys a case cannot set: they are the file's, not a case's.
_NOT_IN_A_CASE = ("cases", "extends", "name")
# What a case id may not hold: the brackets and `::` of ids, line breaks.
_BAD_ID = re.compile(r"[\[\]\x00-\x1f\x7f]|::")
_MAX_ID = 100
# `{{ case.KEY }}` and nothing else: the value itself, not its text.
_WHOLE = re.compile(r"\{\{-?\s*case\.([A-Za-z_][A-Za-z0-9_]*)\s*-?\}\}")
_SCENARIO_KEYS = tuple(Scenario.model_fields)


@dataclass(frozen=True)
class Case:
    """One case: its id, its keys (dotted ones nested), and where each was written."""

    id: str
    values: dict[str, Any]
    source: Located  # its keys' lines, in its own file (the scenario's or a cases file)


def one_scenario(scenario: Scenario, doing: str) -> Scenario:
    """``scenario``, unless its file has cases: what serves one scenario (``harness
    serve``, an A2A agent) cannot tell which case to serve. HarnessError then."""
    if scenario.cases is None:
        return scenario
    ids = ", ".join(str(case.case_id) for case in scenario.case_scenarios)
    raise HarnessError(
        f"{scenario.id_path or scenario.display_name} has cases ({ids}), and {doing} serves "
        "one scenario: give it a file of its own (extends: shares the rest; "
        "docs/scenarios.md#extends)"
    )


# -- reading -----------------------------------------------------------------------------


def read_cases(located: Located, path: Path) -> list[Case]:
    """The scenario's cases (its ``cases:`` list or file); ScenarioError with lines."""
    given = located.data["cases"]
    if isinstance(given, list):
        rows = list(_inline(located, given))
    elif isinstance(given, str) and given.strip():
        rows = list(_from_file(located, path.parent / given, given))
    else:
        raise located.error(
            ("cases",),
            "expected a list of cases ([{id: paris, input: ...}, ...]) or the name of a "
            ".jsonl or .csv file beside the scenario",
        )
    if not rows:
        raise located.error(("cases",), "no cases: give at least one")
    issues: list[Issue] = []
    cases: list[Case] = []
    seen: dict[str, int] = {}
    for number, (values, source) in enumerate(rows, 1):
        case = _case(number, values, source, issues)
        if case is None:
            continue
        if case.id in seen:
            file, line = source.where(("id",))
            issues.append(
                (file, line, "id", f"case id {case.id!r} is taken by case {seen[case.id]}")
            )
            continue
        seen[case.id] = number
        cases.append(case)
    if issues:
        raise ScenarioError(issues)
    return cases


def _inline(located: Located, given: list[Any]) -> Iterator[tuple[Any, Located]]:
    for i, item in enumerate(given):
        at = ("cases", i)
        lines = {p[2:]: n for p, n in located.lines.items() if p[:2] == at}
        blocks = {p[2:]: n for p, n in located.literal_blocks.items() if p[:2] == at}
        spelled = {p[2:]: t for p, t in located.spelled.items() if p[:2] == at}
        yield item, Located(item, lines, located.file_of(at), blocks, spelled=spelled)


def _from_file(located: Located, file: Path, given: str) -> Iterator[tuple[Any, Located]]:
    shown = display_path(file)
    kind = file.suffix.lower()
    if kind not in (".jsonl", ".csv"):
        raise located.error(
            ("cases",), f"{given}: a cases file is .jsonl (one JSON object a line) or .csv"
        )
    try:
        text = read_bounded(file).decode("utf-8-sig")
    except FileNotFoundError:
        raise located.error(
            ("cases",), f"{given}: no such file (looked for {shown}, beside the scenario)"
        ) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise located.error(("cases",), f"{given}: cannot read it: {exc}") from None
    rows = _jsonl(text, shown) if kind == ".jsonl" else _csv(text, shown)
    for values, line in rows:
        # Every key of a row is on its line.
        yield values, Located(values, dict.fromkeys(_paths(values), line), shown)


def _paths(value: Any, path: Path_ = ()) -> Iterator[Path_]:
    yield path
    if isinstance(value, dict):
        for key, item in value.items():
            yield from _paths(item, (*path, key))
    elif isinstance(value, list):
        for i, item in enumerate(value):
            yield from _paths(item, (*path, i))


def _jsonl(text: str, shown: str) -> Iterator[tuple[Any, int]]:
    def finite(constant: str) -> Any:
        raise ValueError(f"{constant} is not a finite number")

    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            value = json.loads(line, parse_constant=finite)
        except ValueError as exc:
            raise ScenarioError.single(shown, number, "", f"not a JSON object: {exc}") from None
        if not isinstance(value, dict):
            raise ScenarioError.single(
                shown, number, "", 'each line is a JSON object: {"id": "paris", ...}'
            )
        yield value, number


def _csv(text: str, shown: str) -> Iterator[tuple[Any, int]]:
    reader = csv.reader(io.StringIO(text, newline=""))
    try:
        header = next(reader, None)
    except csv.Error as exc:
        raise ScenarioError.single(shown, 1, "", f"not CSV: {exc}") from None
    if not header:
        return
    for i, name in enumerate(header):
        if not name.strip():
            raise ScenarioError.single(shown, 1, "", f"column {i + 1} has no name")
        if header.index(name) != i:
            raise ScenarioError.single(shown, 1, "", f"column {name!r} is named twice")
    while True:
        start = reader.line_num + 1
        try:
            row = next(reader)
        except StopIteration:
            return
        except csv.Error as exc:
            raise ScenarioError.single(shown, start, "", f"not CSV: {exc}") from None
        if not any(cell.strip() for cell in row):
            continue
        if len(row) > len(header):
            raise ScenarioError.single(
                shown, start, "", f"{len(row)} cells, but the header names {len(header)} columns"
            )
        # An empty cell gives the case no such key (the scenario's value stays).
        yield {name: cell for name, cell in zip(header, row, strict=False) if cell != ""}, start


def _case(number: int, values: Any, source: Located, issues: list[Issue]) -> Case | None:
    """A checked case (its id, dotted keys nested), or None with its problems in ``issues``."""

    def issue(path: Path_, message: str) -> None:
        issues.append((*source.where(path), dotted(path), message))

    if not isinstance(values, dict):
        issue((), "a case is a mapping: {id: paris, input: ..., city: Paris}")
        return None
    case_id = values.get("id", f"case-{number}")
    if isinstance(case_id, int) and not isinstance(case_id, bool):
        case_id = str(case_id)
    if not isinstance(case_id, str) or not case_id.strip() or case_id.strip() != case_id:
        issue(("id",), f"a case id is a non-empty text without spaces around it, not {case_id!r}")
        return None
    if _BAD_ID.search(case_id) or len(case_id) > _MAX_ID:
        issue(
            ("id",),
            f"case id {case_id!r}: ids are at most {_MAX_ID} characters, without [, ], :: "
            "or line breaks (it ends the scenario's id: path::name[id])",
        )
        return None
    for key in _NOT_IN_A_CASE:
        if key in values:
            issue((key,), f"a case cannot set {key!r}: it is the scenario file's")
    nested = _nested(values, source, issue)
    return Case(case_id, nested, source) if nested is not None else None


def _nested(
    values: dict[str, Any], source: Located, issue: Callable[[Path_, str], None]
) -> dict[str, Any] | None:
    """``values`` with dotted keys (``expect.final.contains``, as CSV headers name them)
    nested under the scenario key they start with; lines follow."""
    out: dict[str, Any] = {}
    for key, value in values.items():
        parts = key.split(".") if isinstance(key, str) else [key]
        if len(parts) == 1 or parts[0] not in _SCENARIO_KEYS or not all(parts):
            if key in out:
                issue((key,), f"{key!r} is given twice (dotted and nested): keep one")
                return None
            out[key] = value
            continue
        node = out
        for part in parts[:-1]:
            node = node.setdefault(part, {})
            if not isinstance(node, dict):
                issue((key,), f"{key!r} sets a key inside {part!r}, which is given as a value")
                return None
        if parts[-1] in node:
            issue((key,), f"{key!r} is given twice (dotted and nested): keep one")
            return None
        node[parts[-1]] = value
        line = source.lines.get((key,))
        if line is not None:
            for i in range(1, len(parts) + 1):
                source.lines.setdefault(tuple(parts[:i]), line)
    return out


# -- a case's scenario -------------------------------------------------------------------


@dataclass
class CaseDocument:
    """A case's scenario document, the problems met making it, and the fields the case
    set or filled in (a problem there is the case's, not the scenario's)."""

    located: Located
    issues: list[Issue]
    touched: set[str]

    def owns(self, field: str) -> bool:
        """Whether a problem at ``field`` (dotted) is the case's."""
        return any(field == t or field.startswith(f"{t}.") for t in self.touched)


def case_document(located: Located, case: Case) -> CaseDocument:
    """The scenario's document with the case merged over it and its texts filled in."""
    base = {k: v for k, v in located.data.items() if k != "cases"}
    under = Located(
        base, located.lines, located.file, located.literal_blocks, located.files, located.spelled
    )
    keys = {k: v for k, v in case.values.items() if k in _SCENARIO_KEYS}
    source = case.source
    over = Located(keys, source.lines, source.file, source.literal_blocks, spelled=source.spelled)
    document = CaseDocument(overlay(under, over, file=located.file), [], set(keys))
    document.located.data = _fill(document.located.data, (), case, document)
    _unread_keys(case, document.located.data, document.issues)
    return document


def _fill(value: Any, path: Path_, case: Case, document: CaseDocument) -> Any:
    """``value`` with every text that reads only ``case`` filled in."""
    if isinstance(value, dict):
        return {k: _fill(v, (*path, k), case, document) for k, v in value.items()}
    if isinstance(value, list):
        return [_fill(v, (*path, i), case, document) for i, v in enumerate(value)]
    if not isinstance(value, str) or "case" not in value:
        return value
    if not any(marker in value for marker in TEMPLATE_MARKERS):
        return value
    compiled = parse_template(value)
    if compiled is None or "case" not in compiled.free:
        return value  # plain text
    document.touched.add(dotted(path))

    def issue(message: str) -> None:
        document.issues.append((*document.located.where(path), dotted(path), message))

    if set(compiled.free) != {"case"}:
        if not _stub_template(path):
            others = ", ".join(sorted(set(compiled.free) - {"case"}))
            issue(
                f"this text reads case and also {others}, which only a tool's returns: "
                "template knows (args, call, faker): keep to {{ case.KEY }} here"
            )
        return value  # a stub's template: it reads case as it renders
    missing = [f for f in case_fields(value) if f not in case.values]
    if missing:
        issue(_missing(case, missing[0]))
        return value
    whole = _WHOLE.fullmatch(value.strip())
    if whole:
        return case.values[whole.group(1)]
    try:
        return render(compiled.template, {"case": case.values})
    except TemplateError as exc:
        issue(f"template error: {exc}")
    except Exception as exc:
        issue(f"template error: {type(exc).__name__}: {exc}")
    return value


def _stub_template(path: Path_) -> bool:
    """Whether ``path`` is in a stub's result (``tools.NAME.returns`` / ``results``),
    a template rendered at each call."""
    return any(
        part == "tools" and path[i + 2 : i + 3] in (("returns",), ("results",))
        for i, part in enumerate(path[:-2])
    )


def _missing(case: Case, field: str) -> str:
    hint = difflib.get_close_matches(field, list(case.values), n=1)
    if hint:
        return f"case.{field}: the case has no key {field!r} (did you mean {hint[0]!r}?)"
    known = ", ".join(sorted(case.values))
    return f"case.{field}: the case has no key {field!r}; its keys: {known}"


def _unread_keys(case: Case, data: Any, issues: list[Issue]) -> None:
    """A case key that is no scenario key and that no text reads, when it looks like a
    misspelt scenario key (``inptu``): it would be lost without a word."""
    read = set(_read_fields(data))
    for key in case.values:
        if key in _SCENARIO_KEYS or key == "id" or key in read:
            continue
        hint = difflib.get_close_matches(key, _SCENARIO_KEYS, n=1, cutoff=0.75)
        if hint:
            issues.append(
                (
                    *case.source.where((key,)),
                    key,
                    f"{key!r} is no scenario key (did you mean {hint[0]!r}?) and no "
                    f"{{{{ case.{key} }}}} reads it",
                )
            )


def _read_fields(value: Any) -> Iterator[str]:
    if isinstance(value, dict):
        for item in value.values():
            yield from _read_fields(item)
    elif isinstance(value, list):
        for item in value:
            yield from _read_fields(item)
    elif isinstance(value, str) and "case" in value:
        yield from case_fields(value)


def load_cases(
    located: Located,
    path: Path,
    validated: Callable[[Located, Path, tuple[str, dict[str, Any]]], Scenario],
) -> Scenario:
    """The scenario of a file with ``cases:``: each case made and checked (``validated``:
    the loader's schema and checks); the first case's scenario, holding them all."""
    cases = read_cases(located, path)
    variants: list[Scenario] = []
    shared: list[Issue] = []
    own: dict[Issue, list[str]] = {}  # a case's problem -> the cases that have it
    for case in cases:
        document = case_document(located, case)
        for issue in document.issues:
            own.setdefault(issue, []).append(case.id)
        try:
            variant = validated(document.located, path, (case.id, case.values))
        except ScenarioError as exc:
            # A text the case could not fill in is said once, not again as the wrong
            # value it left.
            said = {issue[:3] for issue in document.issues}
            for issue in exc.issues:
                if issue[:3] in said:
                    continue
                if document.owns(issue[2]):
                    own.setdefault(issue, []).append(case.id)
                elif issue not in shared:
                    shared.append(issue)  # the scenario's own: said once
        else:
            if not document.issues:
                variants.append(variant)
    if shared or own:
        raise ScenarioError(shared + _of_cases(own, len(cases)))
    first = variants[0]
    scenario = first.model_copy(update={"cases": located.data["cases"]})
    scenario.set_case(None, None)
    scenario.set_variants(variants)
    return scenario


def _of_cases(own: dict[Issue, list[str]], cases: int) -> list[Issue]:
    """The cases' problems, each saying which case has it (or that every case does)."""
    out: list[Issue] = []
    for (file, line, field, message), ids in own.items():
        hint = ""
        if file.endswith(".csv") and "expected" in message:
            hint = " (CSV cells are text: give numbers, lists and mappings in a .jsonl file)"
        if len(ids) == cases > 1:
            out.append((file, line, field, f"{message} (every case){hint}"))
        else:
            out += [(file, line, field, f"{message} (case {i!r}){hint}") for i in ids]
    return out
