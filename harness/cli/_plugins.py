"""``harness plugins``, and the ``-p MODULE`` option of run, validate and plugins."""

from __future__ import annotations

import argparse
import json
from typing import Any

from harness._exitcodes import EXIT
from harness.cli._parsing import Parser, UsageError

__all__ = ["PLUGIN_HELP", "add_arguments", "handle", "load_plugin_options"]

PLUGIN_HELP = "load a harness plugin module first (repeatable), as harness run -p does"


def add_arguments(parser: Parser) -> None:
    """``harness plugins``' description and options."""
    parser.description = (
        "List the plugins harness loads here (built-ins, entry points, the "
        "project's [tool.harness] plugins, -p), with their hooks and what they registered."
    )
    parser.unknown_hint = ""
    parser.add_argument(
        "-p", dest="plugins", action="append", default=[], metavar="MODULE", help=PLUGIN_HELP
    )
    parser.add_argument("--json", action="store_true", help="print JSON")


def load_plugin_options(modules: list[str]) -> None:
    """Load ``-p`` modules now, so that one that does not load is named as the user did."""
    from harness._plugins import PluginError, discover, load_plugin_modules

    if not modules:
        return
    discover()  # discovery's own errors (pyproject, entry points) are not -p's
    for module in modules:
        try:
            load_plugin_modules([module])
        except PluginError as exc:
            # harness._plugins says where a module came from as "--harness-plugin: ";
            # here it came from -p.
            message = str(exc).removeprefix("--harness-plugin: ")
            raise UsageError(f"-p {module}: {message}") from None


def _rows() -> list[dict[str, Any]]:
    """One row per loaded plugin: name, origin, file, hooks and what it registered."""
    from harness._plugins import KINDS, discover

    plugins = discover()  # the project of the folder the command runs in
    for kind in KINDS:
        plugins.registry(kind)  # fills plugins.registered
    rows = []
    for name, plugin in plugins.plugins():
        hooks = sorted(caller.name for caller in plugins.pm.get_hookcallers(plugin) or [])
        registered = plugins.registered.get(name)
        rows.append(
            {
                "name": name,
                "origin": plugins.origin(name),
                "file": getattr(plugin, "__file__", None),
                "hooks": hooks,
                "registered": {
                    kind: list(getattr(registered, kind))
                    for kind in KINDS
                    if registered is not None and getattr(registered, kind)
                },
            }
        )
    return rows


def handle(options: argparse.Namespace) -> int:
    """``harness plugins [-p MODULE] [--json]``."""
    load_plugin_options(options.plugins)
    rows = _rows()
    if options.json:
        print(json.dumps(rows, indent=2))
        return EXIT["passed"]
    for row in rows:
        print(f"{row['name']}  ({row['origin']})")
        print(f"  hooks: {', '.join(row['hooks']) or 'none'}")
        for kind, names in row["registered"].items():
            print(f"  {kind}: {', '.join(names)}")
    return EXIT["passed"]
