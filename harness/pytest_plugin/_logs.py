"""Secrets masked in what pytest's logging shows or keeps (docs/running.md): with
``--log-cli-level=DEBUG`` the SDKs and vcrpy log requests and answers, keys among them,
on loggers of their own, which harness's own logger filter never sees."""

from __future__ import annotations

import pytest

__all__ = ["pytest_sessionstart", "scrub_logs"]

# The handlers of pytest's logging plugin: its live log, its log file, and the records a
# test's caplog and a failure's report keep.
_HANDLERS = ("log_cli_handler", "log_file_handler", "caplog_handler", "report_handler")


def scrub_logs(config: pytest.Config) -> None:
    """Put harness's ScrubbingFilter on each handler of pytest's logging plugin (once)."""
    from harness._secrets import ScrubbingFilter

    logging_plugin = config.pluginmanager.get_plugin("logging-plugin")
    for name in _HANDLERS:
        handler = getattr(logging_plugin, name, None)
        if handler is not None and not any(isinstance(f, ScrubbingFilter) for f in handler.filters):
            handler.addFilter(ScrubbingFilter())


@pytest.hookimpl(tryfirst=True)
def pytest_sessionstart(session: pytest.Session) -> None:
    """Secrets are masked in every log line the session shows or keeps, from its start."""
    scrub_logs(session.config)
