"""Serving a cassette over HTTP: replay with docs/recording.md#matching, and the recording
proxy.

``cassette_app`` answers each request from the cassette (``match: body`` or
``sequential``, through the same indexed vcrpy cassette the ``openai`` source uses). A
request the cassette cannot answer gets HTTP 400 with the explained miss (the file, the
scenario, the request's index in the run, a diff with the nearest recorded request);
under a record mode that allows it, it is sent on to the upstream API instead (the real
key from harness's own environment, never the target's dummy) and the interaction is
recorded. ``close()`` writes what was recorded (scrubbed, atomically, in the readable
format of docs/recording.md#the-cassette-file).
"""

from __future__ import annotations

import os
from types import SimpleNamespace
from typing import Any

from harness._modelwires import WireVendor, error_wire, vendor_of, vendors
from harness._secrets import Scrubber
from harness._vendors import OPENAI
from harness.cassettes._httpx import httpx_of as _httpx
from harness.cassettes._session import CassetteSession, key_refused, no_key_refusal
from harness.wires import OPENAI_CHAT
from harness.wires._neutral import WireError

__all__ = ["DEFAULT_UPSTREAM", "CassetteApp"]

DEFAULT_UPSTREAM = OPENAI.base_url

# Hop-by-hop or length headers that do not describe a body served again decoded.
_DROPPED = {"content-length", "content-encoding", "transfer-encoding", "connection"}
# Not sent upstream: the target's keys are dummies (harness sends the real key),
# and the connection's own headers are the proxy's. Every other header the agent sets (a
# gateway's token, `OpenAI-Beta`) is forwarded; none is written to the cassette.
_NOT_FORWARDED = {
    "api-key",
    "host",
    "content-length",
    "connection",
    "keep-alive",
    "transfer-encoding",
    "te",
    "upgrade",
    "accept-encoding",
    "proxy-authorization",
    "proxy-connection",
}


def _vendor(scope: dict[str, Any]) -> WireVendor:
    """Whose API a served request is (harness._modelwires.vendor_of, as harness serve tells
    it: a model's metadata at ``/v1/models/{id}`` is any vendor's, told by the headers)."""
    headers = {
        k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope.get("headers", [])
    }
    return vendor_of(scope["path"], headers)


class CassetteApp:
    """An ASGI app answering from ``session``'s cassette (recording the misses it may)."""

    def __init__(
        self,
        session: CassetteSession,
        upstream: str | None = None,
        *,
        repeat: bool = False,
        vendor: str = "openai",
    ) -> None:
        self.session = session
        # Serving to anything (`harness serve --cassette`): once every matching interaction
        # was played, the cassette starts over, as a stateless server would answer again.
        self.repeat = repeat
        # Per vendor (harness's own and those plugins registered with their wires): where
        # its requests go (``upstream``, the scenario's base_url, is ``vendor``'s; the
        # others' come from their SDKs' variables) and its key. Read now: the target gets
        # dummies in the same environment later.
        known = vendors()
        self.upstreams = {
            spec.name: (
                (upstream if spec.name == vendor and upstream else None)
                or (os.environ.get(spec.base_url_variable) if spec.base_url_variable else None)
                or spec.base_url
            ).rstrip("/")
            for spec in known
        }
        self.keys = {spec.name: spec.key() for spec in known}
        # The headers a target's dummy key goes in: harness sends the real one.
        self.key_headers = {spec.key_header for spec in known if spec.key_header}
        self.refused: str | None = None
        self._paths: set[str] | None = None

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        """The ASGI entry point."""
        if scope["type"] != "http":
            return
        if scope["method"] == "POST" and scope["path"] == "/v1/reset":
            self.session.cassette.rewind()
            self.session.requests_sent = 0
            await send({"type": "http.response.start", "status": 204, "headers": []})
            await send({"type": "http.response.body", "body": b"", "more_body": False})
            return
        body = b""
        while True:
            message = await receive()
            body += message.get("body", b"")
            if not message.get("more_body"):
                break
        status, headers, content = await self._answer(scope, body)
        await send({"type": "http.response.start", "status": status, "headers": headers})
        await send({"type": "http.response.body", "body": content, "more_body": False})

    async def _answer(self, scope: dict[str, Any], body: bytes) -> tuple[int, list, bytes]:
        from vcr.request import Request

        session = self.session
        session.requests_sent += 1
        path = scope["path"]
        query = scope.get("query_string", b"").decode()
        vendor = _vendor(scope)
        if session.replays_only and path in self._recorded_paths():
            # Served at the paths it was recorded on (pydantic-ai's `/v1beta/openai/...`).
            uri = f"{_origin(self.upstreams[vendor.name])}{path}"
        else:
            prefix = vendor.served_prefix
            suffix = path[len(prefix) :] if prefix and path.startswith(prefix + "/") else path
            uri = f"{self.upstreams[vendor.name]}{suffix}"
        uri += f"?{query}" if query else ""
        request = Request(scope["method"], uri, body or None, {})
        cassette = session.cassette
        # vcrpy's rule, as for the own loop: under `all` / `rewrite`, or into a cassette
        # that did not exist, every request goes upstream (a retry after a 429 included).
        if cassette.can_play_response_for(request):
            return _served(cassette.play_response(request))
        if self.repeat and session.replays_only:
            cassette.rewind()
            if request in cassette:
                return _served(cassette.play_response(request))
        if session.replays_only or self.refused:
            miss = session.miss_error(
                SimpleNamespace(failed_request=request),
                session.requests_sent,
            )
            return _error(path, 400, miss.message, "cassette_miss")
        return await self._forward(scope, request, body)

    def _recorded_paths(self) -> set[str]:
        if self._paths is None:
            self._paths = {stored.path for stored, _ in self.session.cassette.data}
        return self._paths

    async def _forward(self, scope: dict[str, Any], request: Any, body: bytes) -> tuple:
        vendor = _vendor(scope)
        key = self.keys[vendor.name]
        refusal = no_key_refusal(vendor, _host(request.uri), key)
        if refusal is not None:
            # Refused before anything goes out, as the own loop refuses it; a 401 so that
            # the target's SDK gives up at once instead of retrying.
            self.refused = refusal
            return _error(scope["path"], 401, refusal, "recording_refused")
        httpx = _httpx()  # whichever httpx is installed: no SDK's client is involved
        headers = {
            k.decode("latin-1"): v.decode("latin-1")
            for k, v in scope.get("headers", [])
            if k.decode("latin-1").lower() not in _NOT_FORWARDED
            and k.decode("latin-1").lower() not in self.key_headers
        }
        headers["accept-encoding"] = "gzip, deflate"
        if key and vendor.key_header:
            headers[vendor.key_header] = vendor.key_format.format(key)
        try:
            async with httpx.AsyncClient(timeout=600) as client:
                answer = await client.request(
                    request.method, request.uri, content=body, headers=headers
                )
                content = await answer.aread()
        except Exception as exc:
            message = Scrubber().text(
                f"recording proxy: {request.uri}: {type(exc).__name__}: {exc}"
            )
            return _error(scope["path"], 502, message, "upstream_error")
        kept = {k: [v] for k, v in answer.headers.items() if k.lower() not in _DROPPED}
        refused = key_refused(vendor, answer.status_code, content)
        if refused is not None:
            # Never written: every later run would replay the refusal.
            self.refused = refused
        else:
            self.session.cassette.append(
                request,
                {
                    "status": {"code": answer.status_code, "message": answer.reason_phrase},
                    "headers": kept,
                    "body": {"string": content},
                },
            )
        return answer.status_code, _headers(kept), content

    def close(self) -> None:
        """Write the recording (if anything was recorded and the key was not refused)."""
        if self.refused:
            self.session.refused = self.refused
        self.session.save()


def _origin(uri: str) -> str:
    from urllib.parse import urlsplit

    parts = urlsplit(uri)
    return f"{parts.scheme}://{parts.netloc}"


def _host(uri: str) -> str | None:
    from urllib.parse import urlsplit

    return urlsplit(uri).hostname


def _headers(headers: dict[str, list[str]]) -> list[tuple[bytes, bytes]]:
    return [
        (name.lower().encode("latin-1"), value.encode("latin-1"))
        for name, values in headers.items()
        if name.lower() not in _DROPPED
        for value in values
    ]


def _served(response: dict[str, Any]) -> tuple[int, list, bytes]:
    content = response["body"]["string"] or b""
    if isinstance(content, str):
        content = content.encode("utf-8")
    return int(response["status"]["code"]), _headers(response.get("headers") or {}), content


def _error(path: str, status: int, message: str, code: str) -> tuple[int, list, bytes]:
    """An error answer in the form of the wire of ``path`` (OpenAI's for any other path)."""
    import json

    body = (error_wire(path) or OPENAI_CHAT).render_error(WireError(status, message, code))
    return status, [(b"content-type", b"application/json")], json.dumps(body).encode()
