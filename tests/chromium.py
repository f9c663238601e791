"""Opening reports in Debian's headless chromium, for the browser tests, the render
benchmark and the docs' screenshots: one place for the executable and launch options."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest

__all__ = ["CHROMIUM_ARGS", "find_chromium", "launch_chromium", "open_browser"]

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


@contextmanager
def open_browser() -> Iterator[Any]:
    """A headless chromium for a browser test, closed after it; the test fails (never
    skips) with what to install when chromium or playwright is missing.

    Open it after the report is made: playwright's sync API runs an event loop in this
    thread, and the sample agents (``Agent.run``) must not be started inside one.
    """
    executable = find_chromium()
    if executable is None:
        pytest.fail(
            "chromium is not installed: the report's browser tests need Debian's chromium "
            "(apt-get install -y chromium; .ci/run does this in CI)",
            pytrace=False,
        )
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        pytest.fail("playwright is not installed: pip install -e '.[test]'", pytrace=False)
    with sync_playwright() as playwright:
        browser = launch_chromium(playwright, executable)
        try:
            yield browser
        finally:
            browser.close()
