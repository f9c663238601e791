"""Real tools in scenario files: ``use: "module:function"`` or a registered tool's name."""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from harness._errors import HarnessError, where_defined
from harness._tools import Tool, as_tool
from harness.scenario._params import SpecError

__all__ = ["real_tool"]


def _import_target(target: str, root: Path) -> Any:
    module_name, _, attr = target.partition(":")
    if not module_name or not attr:
        raise SpecError(
            ("use",), f"use {target!r}: write 'module:function' or a registered tool's name"
        )
    if str(root) not in sys.path:
        sys.path.insert(0, str(root))
    try:
        module = importlib.import_module(module_name)
    except Exception as exc:
        raise SpecError(
            ("use",), f"cannot import {module_name!r}: {type(exc).__name__}: {exc}"
        ) from None
    obj: Any = module
    for part in attr.split("."):
        try:
            obj = getattr(obj, part)
        except Exception:
            raise SpecError(("use",), f"module {module_name!r} has no attribute {attr!r}") from None
    return obj


def real_tool(use: str, root: Path, registered: Callable[[str], Tool]) -> Tool:
    if ":" in use:
        target = _import_target(use, root)
    else:
        try:
            target = registered(use)
        except HarnessError as exc:
            # A name alone is a tool a plugin registers; the other form is an import path.
            raise SpecError(
                ("use",),
                f"{exc}: a name alone is a tool a plugin registers (harness_register_tools); "
                f'a function of your own is use: "module:function" (say, "myagent.tools:{use}", '
                "imported from the project root; docs/scenarios.md#tools)",
            ) from None
    if not callable(target):
        # Named by its import path: the object's repr may hold a memory address.
        kind = where_defined(type(target))
        raise SpecError(
            ("use",),
            f"cannot use {use!r} as a tool: it is a {kind} object, not a function; point "
            "use: at a function or a @tool",
        )
    try:
        real = as_tool(target)
    except Exception as exc:  # no signature, parameters without a JSON Schema, ...
        reason = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise SpecError(("use",), f"cannot use {use!r} as a tool: {reason}") from None
    return real
