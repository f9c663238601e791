"""Plugin discovery (docs/plugins.md): the built-ins, entry points and a project's plugins."""

from harness._plugins import (
    PluginError,
    Plugins,
    default_plugins,
    discover,
)

__all__ = [
    "PluginError",
    "Plugins",
    "default_plugins",
    "discover",
]
