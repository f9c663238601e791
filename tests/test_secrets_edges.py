"""Secret headers are dropped wherever headers are kept, also where no list of kept
headers applies (every header but the secret ones).

Failed against a hand-made mutant that the other secrets tests let pass
(scripts/mutation.py).
"""

from __future__ import annotations

from harness.secrets import REQUEST_SECRET_HEADERS, RESPONSE_SECRET_HEADERS, Scrubber


def test_secret_headers_are_dropped_with_or_without_a_kept_list():
    sent = {
        "Authorization": "Bearer sk-0123456789abcdef",
        "X-Goog-Api-Key": "AIzaSy0123456789",
        "Cookie": "session=abc",
        "Accept": "application/json",
        "X-Stainless-Lang": "python",
    }
    assert Scrubber.headers(sent, REQUEST_SECRET_HEADERS) == {
        "Accept": "application/json",
        "X-Stainless-Lang": "python",
    }
    answered = {"Set-Cookie": "s=1", "Content-Type": "application/json"}
    assert Scrubber.headers(answered, RESPONSE_SECRET_HEADERS) == {
        "Content-Type": "application/json"
    }
