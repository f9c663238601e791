"""Opening reports in Debian's headless chromium, for the browser tests, the render
benchmark and the docs' screenshots: one place for the executable and launch options."""

from __future__ import annotations

import shutil
from typing import Any

__all__ = ["CHROMIUM_ARGS", "find_chromium", "launch_chromium"]

# Headless, and quiet: no first-run UI, no background requests of chromium's own.
CHROMIUM_ARGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
)


def find_chromium() -> str | None:
    """The ``chromium`` executable on PATH (Debian's package), or None."""
    return shutil.which("chromium")


def launch_chromium(playwright: Any, executable: str, *extra_args: str) -> Any:
    """A headless browser from ``executable`` through playwright's sync API.

    Always the given executable, never a browser build playwright would download.
    """
    return playwright.chromium.launch(
        executable_path=executable, headless=True, args=[*CHROMIUM_ARGS, *extra_args]
    )
