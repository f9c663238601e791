"""Shared test configuration (kept minimal: helpers live next to the tests that use them)."""


def pytest_configure(config):
    # The registry behind tests/test_hookspecs.py: a test that exercises hooks says which.
    config.addinivalue_line(
        "markers", "hooks(*names): the harness hooks this test exercises (see test_hookspecs.py)"
    )
