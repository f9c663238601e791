"""The user docs speak to users: no internal design-file, issue or seed references; nor
do docstrings and comments, which send readers to docs/*.md."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
DOCS = sorted([ROOT / "README.md", *(ROOT / "docs").glob("*.md")])
# Words from the project's own planning that mean nothing to a user. (The design file's
# name is spelled with a class so that this line is no reference to it.)
JARGON = re.compile(r"D[E]SIGN|seed 0|\b[Ii]ssue[- ]")
# In code, where "issue" is an ordinary word: the design file and its numbered sections,
# which a reader of the code does not have (docs/*.md sections are linked instead).
CODE_JARGON = re.compile(r"D[E]SIGN|[Ss]ection [0-9]|seed 0[0-9]")
CODE = sorted([*(ROOT / "harness").rglob("*.py"), *(ROOT / "tests").rglob("*.py")])


@pytest.mark.parametrize("path", DOCS, ids=lambda p: p.name)
def test_docs_have_no_internal_references(path):
    hits = [
        f"{path.name}:{number}: {line.strip()}"
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if JARGON.search(line)
    ]
    assert hits == [], "\n".join(hits)


def test_code_sends_readers_to_the_docs_not_the_design_file():
    hits = [
        f"{path.relative_to(ROOT)}:{number}: {line.strip()}"
        for path in CODE
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if CODE_JARGON.search(line)
    ]
    assert hits == [], "\n".join(hits)
