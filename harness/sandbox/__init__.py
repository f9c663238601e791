"""Sandboxes for code the model writes: one interface, backends by name.

``process`` (always), ``bubblewrap`` (``bwrap`` on PATH), ``docker`` (the Docker SDK
and an engine); ``auto`` picks the strongest that works on this machine (``choice``).
``CodeExecutionTool`` (``tool``) runs the model's code in one.
"""

from harness.sandbox._base import Execution, Limits, Sandbox, SandboxError
from harness.sandbox._choice import BACKENDS, choose, get_sandbox

__all__ = [
    "BACKENDS",
    "Execution",
    "Limits",
    "Sandbox",
    "SandboxError",
    "choose",
    "get_sandbox",
]
