"""Agents with planted bugs for harness explore's tests (tests/test_explore_agents.py):
each written the way its SDK's or framework's docs show, with one common bug, beside the
same agent with the bug fixed. Harness serves their model at OPENAI_BASE_URL (and the
others) and their tools over MCP at HARNESS_MCP_URL."""
