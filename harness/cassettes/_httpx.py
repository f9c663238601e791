"""Which httpx an SDK's HTTP client is built on: the one module every recorded source
and the recording proxy ask (docs/recording.md)."""

from __future__ import annotations

from typing import Any

__all__ = ["httpx_of"]


def httpx_of(sdk: Any = None) -> Any:
    """httpx2 (openai 3.x's, anthropic 2.x's, google-genai 3.x's) when it is installed and
    ``sdk``'s default async client is built on it (any SDK when ``sdk`` is None), else httpx:
    a transport of the other flavour would not plug into the SDK's client."""
    try:
        import httpx2

        if sdk is None or issubclass(sdk.DefaultAsyncHttpxClient, httpx2.AsyncClient):
            return httpx2
    except ImportError:  # pragma: no cover - environments without httpx2
        pass
    import httpx

    return httpx
