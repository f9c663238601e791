"""The example scenarios; a package, so that pytest imports scenarios/mcp/ as
``scenarios.mcp``, not as a module ``mcp`` that would shadow the mcp SDK."""
