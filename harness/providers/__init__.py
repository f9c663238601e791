"""LLM sources on a model vendor's official SDK, live or through a cassette."""
