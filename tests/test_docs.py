"""The user docs speak to users: no internal design-file, issue or seed references."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
DOCS = sorted([ROOT / "README.md", *(ROOT / "docs").glob("*.md")])
# Words from the project's own planning that mean nothing to a user.
JARGON = re.compile(r"DESIGN|seed 0|\b[Ii]ssue[- ]")


@pytest.mark.parametrize("path", DOCS, ids=lambda p: p.name)
def test_docs_have_no_internal_references(path):
    hits = [
        f"{path.name}:{number}: {line.strip()}"
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if JARGON.search(line)
    ]
    assert hits == [], "\n".join(hits)
