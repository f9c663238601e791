"""Which scenario tags can become pytest markers that ``pytest -m`` selects.

A scenario's ``tags`` become markers on its pytest item (harness.pytest_plugin), so a tag
must be something pytest accepts as a marker name and that a ``-m`` expression can name.
The rule lives here, apart from the pytest plugin, because the scenario schema checks it
when a file loads (``harness validate`` included) and must not import pytest to do so.
"""

from __future__ import annotations

import re

__all__ = ["PYTEST_MARKERS", "check_tag"]

# pytest's -m grammar (_pytest/mark/expression.py, the same in pytest 8.0 and 9):
#   ident: (\w|:|\+|-|\.|\[|\]|\\|/)+      with `or`, `and`, `not` reserved.
# ':' is left out: pytest reads a registered marker's name up to the first ':'
# ("name: description"), so a tag holding one could never be registered.
_IDENT_CHAR = re.compile(r"[\w+\-.\[\]\\/]")
_KEYWORDS = ("or", "and", "not")

# pytest's own markers: on a scenario item they would change how it runs (skip, xfail
# turning a failure into a pass) or mean nothing there (parametrize, usefixtures), where
# a tag is only meant to label and select.
PYTEST_MARKERS = (
    "filterwarnings",
    "parametrize",
    "skip",
    "skipif",
    "tryfirst",
    "trylast",
    "usefixtures",
    "xfail",
)


def check_tag(tag: str) -> str:
    """Return ``tag`` when pytest can mark with it and ``-m`` select it; else ValueError."""
    if not tag:
        raise ValueError("a tag cannot be empty")
    bad = sorted({c for c in tag if not _IDENT_CHAR.fullmatch(c)})
    if bad:
        shown = " ".join(repr(c) for c in bad)
        suggestion = "".join(c if _IDENT_CHAR.fullmatch(c) else "_" for c in tag)
        raise ValueError(
            f"tag {tag!r} cannot be selected with pytest -m ({shown} not allowed); use "
            f"letters, digits and _ - + . / [ ] (e.g. {suggestion!r})"
        )
    if tag.startswith("_"):
        suggestion = tag.lstrip("_") or "tag"
        raise ValueError(
            f"tag {tag!r}: pytest marker names cannot start with '_' (e.g. {suggestion!r})"
        )
    if tag in _KEYWORDS:
        raise ValueError(
            f"tag {tag!r} is a keyword of pytest -m expressions and cannot be selected; "
            f"rename it (e.g. '{tag}_')"
        )
    if tag in PYTEST_MARKERS:
        raise ValueError(
            f"tag {tag!r} is one of pytest's own markers and would change how the scenario "
            f"runs; rename it (e.g. '{tag}_tag'), or apply the marker from a conftest.py"
        )
    return tag
