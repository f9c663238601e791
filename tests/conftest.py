"""Shared test configuration (kept minimal: helpers live next to the tests that use them,
unless several test modules need them)."""

import pytest

# pytester: the plugin and CLI tests run real pytest sessions (tests/test_pytest_plugin.py).
pytest_plugins = ["pytester"]


@pytest.fixture
def fresh_plugins():
    """Each test discovers harness plugins in its own folder, and leaves none behind.

    The plugin manager is process-wide and found from the current directory: one
    discovered in a throw-away project must not serve the tests that run next.
    """
    from harness import plugins

    plugins.reset()
    yield
    plugins.reset()


def pytest_configure(config):
    # The registry behind tests/test_hookspecs.py: a test that exercises hooks says which.
    config.addinivalue_line(
        "markers", "hooks(*names): the harness hooks this test exercises (see test_hookspecs.py)"
    )
