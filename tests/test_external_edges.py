"""What a target gets from harness, at the edges: none of the user's own model settings
(account ids, other keys, tokens), the frameworks' telemetry off.

Each test failed against a hand-made mutant that the other external-target tests let
pass (scripts/mutation.py).
"""

from __future__ import annotations

from harness.external._environment import DUMMY_API_KEY, served_variables, target_environment


def test_none_of_the_user_s_model_settings_reach_a_target():
    # The user's shell holds their real account: a target's SDK would read its org and
    # project ids, another key or token, and send them (or talk to the real API).
    user = {
        "OPENAI_ORG_ID": "org-0123456789abcdefABCDEF",
        "OPENAI_PROJECT_ID": "proj_0123456789abcdefABCDEF",
        "OPENAI_ADMIN_KEY": "sk-admin-0123456789",
        "ANTHROPIC_AUTH_TOKEN": "sk-ant-oat01-0123456789",
        "GEMINI_API_KEY": "AIzaSy0123456789abcdef",
        "PATH": "/usr/bin",
        "HOME": "/home/me",
    }
    served = served_variables("http://127.0.0.1:4000/v1")
    changes = target_environment(served, user)
    for name in ("OPENAI_ORG_ID", "OPENAI_PROJECT_ID", "OPENAI_ADMIN_KEY",
                 "ANTHROPIC_AUTH_TOKEN", "GEMINI_API_KEY"):  # fmt: skip
        assert changes[name] is None, name
    assert "PATH" not in changes and "HOME" not in changes
    assert changes["OPENAI_API_KEY"] == changes["GOOGLE_API_KEY"] == DUMMY_API_KEY
    assert changes["OPENAI_AGENTS_DISABLE_TRACING"] == "1"
