"""Example local plugins, loaded through ``[tool.harness] plugins`` in pyproject.toml."""
