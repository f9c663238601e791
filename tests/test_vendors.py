"""One home per model vendor (harness/_vendors.py): a built-in vendor's key variables and
credential header are named in at most two modules of harness, so that a vendor's facts
change in one place and the secrets, cassettes, recording proxy, target environment and
sources that read them cannot drift apart (ARCHITECTURE.md, "Where a new model API goes")."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

import harness
from harness._vendors import BUILTIN_VENDORS, WireVendor

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
    assert "_vendors.py" in modules
    assert len(modules) <= MOST_MODULES, (
        f"{name} is named in {len(modules)} modules of harness ({', '.join(modules)}): "
        "read it from harness._vendors instead"
    )


def test_one_value_in_both_gemini_variables_keeps_the_mask_cassettes_were_written_with():
    """Many set GEMINI_API_KEY and GOOGLE_API_KEY alike: the mask is the same as before
    the vendors had one home, so a cassette recorded since does not change."""
    from harness._secrets import Scrubber

    key = "AIzaSy-harness-test-key-0123456789"
    scrubber = Scrubber({"GEMINI_API_KEY": key, "GOOGLE_API_KEY": key})
    assert scrubber.text(f"key={key}.") == "key=<GEMINI_API_KEY>."


# -- no module but a vendor's own branches on it -------------------------------------------

VENDOR_NAMES = {vendor.name for vendor in BUILTIN_VENDORS}


def _vendor_constants(tree: ast.Module) -> set[str]:
    """The names a module binds to harness._vendors' rows (``GEMINI``, ``GEMINI as G``)."""
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module == "harness._vendors":
            found |= {a.asname or a.name for a in node.names if a.name.isupper()}
    return found - {"BUILTIN_VENDORS"}


def _vendor_named(node: ast.AST, constants: set[str]) -> str | None:
    """The vendor ``node`` names: a vendor's name as a string, ``GEMINI.name``, ``GEMINI``
    (for ``is``), or any of those in a tuple, list or set (for ``in``)."""
    if isinstance(node, ast.Constant) and node.value in VENDOR_NAMES:
        return str(node.value)
    if isinstance(node, ast.Attribute) and node.attr == "name":
        return _vendor_named(node.value, constants)
    if isinstance(node, ast.Name) and node.id in constants:
        return node.id.lower()
    if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        return next(filter(None, (_vendor_named(e, constants) for e in node.elts)), None)
    return None


def _comparisons(tree: ast.Module) -> list[tuple[int, str]]:
    """Where a module compares something with a vendor (``==``, ``!=``, ``is``, ``in``,
    a ``match`` case): (line, vendor)."""
    constants = _vendor_constants(tree)
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Compare):
            named = [_vendor_named(n, constants) for n in (node.left, *node.comparators)]
            found += [(node.lineno, name) for name in named if name]
        elif isinstance(node, ast.MatchValue):
            name = _vendor_named(node.value, constants)
            found += [(node.lineno, name)] if name else []
    return found


def _own(relative: str, vendor: str) -> bool:
    """Whether a module is ``vendor``'s own: the table, or its wire or source module."""
    # (Implementation modules may be _-private: wires/_gemini.py is Gemini's too.)
    folder, _, stem = relative.rpartition("/")
    if not folder:
        return stem.lstrip("_") == "vendors.py"
    return folder.lstrip("_") in ("wires", "providers") and stem.lstrip("_").startswith(vendor)


def _branches(source: str, relative: str) -> list[str]:
    return [
        f"{relative}:{line} compares a name with {vendor!r}"
        for line, vendor in _comparisons(ast.parse(source))
        if not _own(relative, vendor)
    ]


def test_no_module_but_a_vendors_own_compares_a_vendor_name():
    """A vendor's difference is data in its row (harness._vendors) or code in its wire and
    source: a module that tells vendors apart by name would need a change for every new
    one, and a plugin's vendor could never be told apart at all."""
    found = [
        branch
        for path in sorted(ROOT.rglob("*.py"))
        for branch in _branches(path.read_text("utf-8"), path.relative_to(ROOT).as_posix())
    ]
    assert found == [], "\n".join(found)


@pytest.mark.parametrize(
    "code",
    [
        'if vendor == "gemini":\n    pass',
        'refusal = "x" if "anthropic" != api else "y"',
        "from harness._vendors import GEMINI\nif vendor == GEMINI.name:\n    pass",
        "from harness._vendors import GEMINI as G\nok = vendor is G",
        'ok = api in ("openai", "other")',
        'match api:\n    case "anthropic":\n        pass',
    ],
)
def test_the_scan_sees_each_way_of_comparing_a_vendor_name(code):
    assert _branches(code, "external/_cassette.py")
    # ... and leaves a vendor's own modules alone, for their own vendor only.
    own = {"gemini": "wires/_gemini.py", "anthropic": "providers/anthropic.py"}
    vendor = next(name for name in sorted(VENDOR_NAMES) if name in code.lower())
    assert not _branches(code, own.get(vendor, f"wires/{vendor}_chat.py"))


# -- the built-ins come as a plugin's do ---------------------------------------------------


def test_the_built_in_vendors_come_with_their_wires_through_the_hook(fresh_plugins):
    from harness import _modelwires as modelwires
    from harness._plugins import discovery
    from harness._vendors import ANTHROPIC, GEMINI, OPENAI

    registry = discovery.default().registry("wires")
    assert {name: vendor for name, (_, vendor) in registry.items()} == {
        "openai-chat": OPENAI,
        "openai-responses": OPENAI,
        "anthropic": ANTHROPIC,
        "gemini": GEMINI,
    }
    assert modelwires.vendors() == list(BUILTIN_VENDORS)
    # Whose a request no wire reads is, by the vendors' own paths and SDK headers.
    assert modelwires.vendor_of("/v1/models/x", {}) is OPENAI
    assert modelwires.vendor_of("/v1/models/x", {"anthropic-version": "1"}) is ANTHROPIC
    assert modelwires.vendor_of("/v1/models/x", {"x-goog-api-client": "g"}) is GEMINI
    assert modelwires.vendor_of("/v1beta/models", {"anthropic-version": "1"}) is GEMINI
    assert modelwires.vendor_of("/v1/messages/count_tokens", {}) is ANTHROPIC
    assert modelwires.counted_paths() == [("/v1/messages/count_tokens", registry["anthropic"][0])]


# A user's shell with every built-in vendor's settings, and a plugin's the built-ins do not
# know: what a target gets is exactly what it got before the built-in vendors came
# through the hook (no dummy GEMINI_API_KEY beside GOOGLE_API_KEY, no other variable).
USER = {
    name: "v-0123456789abcdef"
    for name in (
        *("OPENAI_API_KEY", "OPENAI_BASE_URL", "OPENAI_ORG_ID", "OPENAI_PROJECT_ID"),
        *("AZURE_OPENAI_ENDPOINT", "ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL"),
        *("ANTHROPIC_AUTH_TOKEN", "GEMINI_API_KEY", "GOOGLE_API_KEY", "GOOGLE_GEMINI_BASE_URL"),
        *("GOOGLE_GENAI_USE_VERTEXAI", "GOOGLE_CLOUD_PROJECT", "PATH", "HOME", "ACME_API_KEY"),
    )
}
TARGET = {
    "ANTHROPIC_API_KEY": "sk-harness-target",
    "ANTHROPIC_AUTH_TOKEN": None,
    "ANTHROPIC_BASE_URL": "http://127.0.0.1:4000",
    "AZURE_OPENAI_ENDPOINT": None,
    "GEMINI_API_KEY": None,
    "GOOGLE_API_KEY": "sk-harness-target",
    "GOOGLE_GEMINI_BASE_URL": "http://127.0.0.1:4000",
    "GOOGLE_GENAI_USE_VERTEXAI": None,
    "OPENAI_API_KEY": "sk-harness-target",
    "OPENAI_BASE_URL": "http://127.0.0.1:4000/v1",
    "OPENAI_ORG_ID": None,
    "OPENAI_PROJECT_ID": None,
}


def test_a_targets_environment_is_the_built_in_vendors_exactly(fresh_plugins):
    from harness.external._environment import TELEMETRY, served_variables, target_environment

    changes = target_environment(served_variables("http://127.0.0.1:4000/v1"), USER)
    assert changes == {**TARGET, **TELEMETRY}


def test_every_registered_vendors_key_is_masked_and_kept_from_a_target(fresh_plugins, tmp_path):
    """One assertion for every vendor, built-in or a plugin's (tests/wire_plugin_example.py):
    its keys' values are masked, its key header dropped from a recording, its key
    parameter masked in URLs, and a target gets none of the user's key variables."""
    import sys

    from harness import _modelwires as modelwires
    from harness._plugins import discover
    from harness._secrets import Scrubber
    from harness.external._environment import DUMMY_API_KEY, served_variables, target_environment

    sys.path.insert(0, str(Path(__file__).parent))
    try:
        (tmp_path / "pyproject.toml").write_text(
            '[tool.harness]\nplugins = ["wire_plugin_example"]\n'
        )
        discover(tmp_path)
        known = modelwires.vendors()
    finally:
        sys.path.remove(str(Path(__file__).parent))
    assert [v.name for v in known] == ["openai", "anthropic", "gemini", "acme"]
    for vendor in known:
        for i, variable in enumerate(vendor.key_variables):
            key = f"{vendor.name}-secret-{i}-Qz7Wp3Xv9Rt2Ym8Kd4Hs"
            scrubber = Scrubber({variable: key})
            assert key[5:25] not in scrubber.text(f"echo {key}"), variable
            changes = target_environment(served_variables("http://127.0.0.1:9/v1"), {variable: key})
            assert changes[variable] in (None, DUMMY_API_KEY), variable
        if vendor.key_header:
            request = {"uri": vendor.base_url, "headers": {vendor.key_header.title(): ["k"]}}
            kept = Scrubber().interaction({"request": request})["request"]["headers"]
            assert kept == {}, vendor.name
        for param in vendor.key_params:
            url = f"{vendor.base_url}/x?{param}=Qz7Wp3Xv9Rt2Ym8Kd4Hs6Jb1"
            assert "Qz7Wp3Xv9Rt2" not in Scrubber().text(url), (vendor.name, param)


def test_a_plugin_vendors_other_keys_and_prefixed_settings_are_kept_from_a_target(
    fresh_plugins, tmp_path, monkeypatch
):
    """A plugin's vendor whose SDK reads two key variables and other ``ACME_*`` settings
    (docs/plugins.md#a-model-api-from-a-plugin): the target gets the dummy in the first
    key variable and none of the user's others, as for a built-in vendor."""
    from harness._plugins import discover
    from harness.external._environment import DUMMY_API_KEY, served_variables, target_environment

    monkeypatch.syspath_prepend(str(Path(__file__).parent))
    monkeypatch.syspath_prepend(str(tmp_path))
    (tmp_path / "acme_two_keys.py").write_text(
        "import dataclasses\n\nimport wire_plugin_example as example\n\n"
        "VENDOR = dataclasses.replace(\n"
        "    example.ACME, key_variables=('ACME_API_KEY', 'ACME_TOKEN'), env_prefixes=('ACME_',)\n"
        ")\n\n\n"
        "def harness_register_wires(register):\n"
        "    register(example.WIRE, vendor=VENDOR)\n"
    )
    (tmp_path / "pyproject.toml").write_text('[tool.harness]\nplugins = ["acme_two_keys"]\n')
    discover(tmp_path)
    user = {
        "ACME_API_KEY": "acme-key-Qz7Wp3Xv9Rt2Ym8Kd4Hs",
        "ACME_TOKEN": "acme-token-Qz7Wp3Xv9Rt2Ym8Kd4Hs",
        "ACME_REGION": "eu-west",
        "HOME": "/home/me",
    }
    changes = target_environment(served_variables("http://127.0.0.1:9/v1"), user)
    assert changes["ACME_API_KEY"] == DUMMY_API_KEY
    assert changes["ACME_BASE_URL"] == "http://127.0.0.1:9"
    assert changes["ACME_TOKEN"] is None
    assert changes["ACME_REGION"] is None
    assert "HOME" not in changes


# -- one "no key" and one "key refused", each vendor's difference in its row ---------------


@pytest.mark.parametrize(
    ("vendor", "line"),
    [
        (
            "OPENAI",
            "recording needs OPENAI_API_KEY: it is not set, and api.openai.com refuses "
            "requests without a key; nothing was recorded (set the key, or base_url / "
            "OPENAI_BASE_URL for another endpoint)",
        ),
        (
            "GEMINI",
            "recording needs GEMINI_API_KEY (or GOOGLE_API_KEY): neither is set, and "
            "generativelanguage.googleapis.com refuses requests without a key; nothing was "
            "recorded (set the key, or base_url / GOOGLE_GEMINI_BASE_URL for another endpoint)",
        ),
    ],
)
def test_recording_without_a_key_is_refused_naming_the_vendors_key(fresh_plugins, vendor, line):
    import harness._vendors
    from harness.cassettes._session import no_key_refusal

    row = getattr(harness._vendors, vendor)
    assert no_key_refusal(row, row.host, None) == line
    assert no_key_refusal(row, row.host, "a-key") is None
    assert no_key_refusal(row, "127.0.0.1", None) is None  # a local server takes none


def test_a_refused_key_is_told_by_the_vendors_statuses_and_reasons(fresh_plugins):
    import json

    from harness._vendors import ANTHROPIC, GEMINI, OPENAI
    from harness.cassettes._session import key_refused

    invalid = {
        "error": {"message": "API key not valid.", "details": [{"reason": "API_KEY_INVALID"}]}
    }
    body = json.dumps(invalid).encode()
    assert key_refused(GEMINI, 400, body) == (
        "the API refused the key (HTTP 400: API key not valid.); nothing was recorded: "
        "check GEMINI_API_KEY (or GOOGLE_API_KEY)"
    )
    # Only Gemini says so with a 400: another vendor's 400 is an error to record.
    assert key_refused(OPENAI, 400, body) is None
    assert key_refused(GEMINI, 400, b'{"error": {"message": "bad field"}}') is None
    assert key_refused(OPENAI, 401, b'{"error": {"message": "Incorrect API key"}}') == (
        "the API refused the key (HTTP 401: Incorrect API key); nothing was recorded: "
        "check OPENAI_API_KEY (and OPENAI_ORG_ID / OPENAI_PROJECT_ID)"
    )
    assert key_refused(ANTHROPIC, 403, b"not json") == (
        "the API refused the key (HTTP 403); nothing was recorded: check ANTHROPIC_API_KEY"
    )


def test_a_plugin_vendors_secret_and_account_variables_are_kept_from_a_target(
    fresh_plugins, tmp_path, monkeypatch
):
    """A plugin's vendor that names a secret and an account variable but no prefix: the
    user's values of them never reach a target (harness masks them in what it writes; a
    target given them could reach the real API as that account)."""
    from harness._plugins import discover
    from harness.external._environment import served_variables, target_environment

    monkeypatch.syspath_prepend(str(Path(__file__).parent))
    monkeypatch.syspath_prepend(str(tmp_path))
    (tmp_path / "acme_account.py").write_text(
        "import dataclasses\n\nimport wire_plugin_example as example\n\n"
        "VENDOR = dataclasses.replace(\n"
        "    example.ACME, secret_variables=('ACME_SIGNING_SECRET',),"
        " account_variables=('ACME_ACCOUNT_ID',), env_prefixes=()\n"
        ")\n\n\n"
        "def harness_register_wires(register):\n"
        "    register(example.WIRE, vendor=VENDOR)\n"
    )
    (tmp_path / "pyproject.toml").write_text('[tool.harness]\nplugins = ["acme_account"]\n')
    discover(tmp_path)
    user = {"ACME_SIGNING_SECRET": "sig-Qz7Wp3Xv9Rt2Ym8Kd4Hs", "ACME_ACCOUNT_ID": "acct-1234"}
    changes = target_environment(served_variables("http://127.0.0.1:9/v1"), user)
    assert changes["ACME_SIGNING_SECRET"] is None
    assert changes["ACME_ACCOUNT_ID"] is None
