"""One home per model vendor (harness/vendors.py): a built-in vendor's key variables and
credential header are named in at most two modules of harness, so that a vendor's facts
change in one place and the secrets, cassettes, recording proxy, target environment and
sources that read them cannot drift apart (ARCHITECTURE.md, "Where a new model API goes")."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import harness
from harness.vendors import BUILTIN_VENDORS, WireVendor

ROOT = Path(harness.__file__).parent
# A2A's own callers send their credential in Authorization: that is no model vendor's.
NOT_A_VENDORS = {"authorization": ("a2a/",)}
MOST_MODULES = 2


def _naming(name: str, *, header: bool) -> list[str]:
    """The modules of harness naming ``name`` (a whole name: ``proxy-authorization`` is not
    ``authorization``), in code, strings or comments."""
    pattern = re.compile(rf"(?<![\w-]){re.escape(name)}(?![\w-])", re.IGNORECASE if header else 0)
    skipped = NOT_A_VENDORS.get(name, ())
    found = []
    for path in sorted(ROOT.rglob("*.py")):
        relative = path.relative_to(ROOT).as_posix()
        if not relative.startswith(skipped) and pattern.search(path.read_text("utf-8")):
            found.append(relative)
    return found


def _names(vendor: WireVendor) -> list[tuple[str, bool]]:
    header = [(vendor.key_header, True)] if vendor.key_header else []
    return [(name, False) for name in vendor.key_variables] + header


@pytest.mark.parametrize(
    ("name", "header"),
    [pair for vendor in BUILTIN_VENDORS for pair in _names(vendor)],
    ids=lambda value: value if isinstance(value, str) else "",
)
def test_a_vendors_key_variable_and_header_are_named_in_at_most_two_modules(
    name: str, header: bool
) -> None:
    modules = _naming(name, header=header)
    # The home names it: the scan sees what it counts.
    assert "vendors.py" in modules
    assert len(modules) <= MOST_MODULES, (
        f"{name} is named in {len(modules)} modules of harness ({', '.join(modules)}): "
        "read it from harness.vendors instead"
    )


def test_one_value_in_both_gemini_variables_keeps_the_mask_cassettes_were_written_with():
    """Many set GEMINI_API_KEY and GOOGLE_API_KEY alike: the mask is the same as before
    the vendors had one home, so a cassette recorded since does not change."""
    from harness.secrets import Scrubber

    key = "AIzaSy-harness-test-key-0123456789"
    scrubber = Scrubber({"GEMINI_API_KEY": key, "GOOGLE_API_KEY": key})
    assert scrubber.text(f"key={key}.") == "key=<GEMINI_API_KEY>."
