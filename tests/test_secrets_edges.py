"""Secret headers are dropped wherever headers are kept, also where no list of kept
headers applies (every header but the secret ones).

Failed against a hand-made mutant that the other secrets tests let pass
(scripts/mutation.py).
"""

from __future__ import annotations

from harness._secrets import REQUEST_SECRET_HEADERS, RESPONSE_SECRET_HEADERS, Scrubber


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


def test_a_body_that_is_not_utf8_holding_a_key_is_masked_in_the_recording():
    # A request body in another encoding (a latin-1 form, a binary upload beside a key
    # the client put in it) cannot be read as text: the key is masked in its bytes.
    key = "sk-proj-0123456789abcdefghij"
    body = b"\xff\xfe name=caf\xe9&api_key=" + key.encode() + b"&end\x80"
    interaction = {
        "request": {"uri": "http://127.0.0.1/v1/files", "body": body, "headers": {}},
        "response": {"status": {"code": 200}, "headers": {}, "body": {"string": body}},
    }
    scrubbed = Scrubber({"OPENAI_API_KEY": key}).interaction(interaction)
    for written in (scrubbed["request"]["body"], scrubbed["response"]["body"]["string"]):
        assert key.encode() not in written
        assert b"api_key=<OPENAI_API_KEY>&end\x80" in written  # the rest kept as sent
