"""Shared test configuration (kept minimal: helpers live next to the tests that use them)."""

# pytester: the plugin and CLI tests run real pytest sessions (tests/test_pytest_plugin.py).
pytest_plugins = ["pytester"]


def pytest_configure(config):
    # The registry behind tests/test_hookspecs.py: a test that exercises hooks says which.
    config.addinivalue_line(
        "markers", "hooks(*names): the harness hooks this test exercises (see test_hookspecs.py)"
    )
