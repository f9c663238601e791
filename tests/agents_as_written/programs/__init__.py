"""Agents written the way their frameworks' own docs show, for tests/test_agents_as_written.py."""
