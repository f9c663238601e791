"""LLM sources on a model vendor's official SDK, live or through a cassette: the SDK sends
and receives (auth, retries, errors, server-sent events), the wire of the API
(``harness.wires``) writes the request and reads the answer."""
