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
from dataclasses import dataclass
from types import SimpleNamespace
from typing import Any

from harness.cassettes.session import CassetteSession, key_refused, no_key_refusal
from harness.modelwires import WireVendor, plugin_vendors, vendor_for, wire_for
from harness.secrets import Scrubber
from harness.vendors import BUILTIN_VENDORS, GEMINI, OPENAI
from harness.wires import OPENAI_CHAT, vendor_of
from harness.wires.neutral import WireError

__all__ = ["DEFAULT_UPSTREAM", "GEMINI_UPSTREAM", "CassetteApp"]

DEFAULT_UPSTREAM = OPENAI.base_url
GEMINI_UPSTREAM = GEMINI.base_url

# Hop-by-hop or length headers that do not describe a body served again decoded.
_DROPPED = {"content-length", "content-encoding", "transfer-encoding", "connection"}
# Not sent upstream: the target's keys are dummies (harness sends the real key),
# and the connection's own headers are the proxy's. Every other header the agent sets (a
# gateway's token, `OpenAI-Beta`) is forwarded; none is written to the cassette.
_NOT_FORWARDED = {
    *(vendor.key_header for vendor in BUILTIN_VENDORS if vendor.key_header),
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


@dataclass(frozen=True)
class _Upstream:
    """Where a vendor's API is recorded from: its SDK's base-URL variable and default (the
    part of a served path the base URL already holds: ``/v1`` for OpenAI's), the key's
    variable and the header the key goes in."""

    base_variable: str
    default: str
    served_prefix: str
    key_variables: tuple[str, ...]  # the first one set is used
    key_header: str
    key_format: str

    def key(self) -> str | None:
        """The key in the environment now, if any."""
        return next((os.environ[n] for n in self.key_variables if os.environ.get(n)), None)


def _vendor(scope: dict[str, Any]) -> str:
    """Whose API a served request is: a plugin's wire's vendor (harness_register_wires),
    else harness.wires.vendor_of, as harness serve tells it (a model's metadata at
    ``/v1/models/{id}`` is any vendor's, told by the headers)."""
    wire = wire_for(scope["path"])
    plugged = vendor_for(wire) if wire is not None else None
    if plugged is not None:
        return plugged.name
    headers = {
        k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope.get("headers", [])
    }
    return vendor_of(scope["path"], headers)


def _upstream_of(vendor: WireVendor) -> _Upstream:
    """Where ``vendor``'s requests are recorded from (harness's own vendors' and plugins')."""
    return _Upstream(
        vendor.base_url_variable or "",
        vendor.base_url,
        vendor.served_prefix,
        vendor.key_variables,
        vendor.key_header or "",
        vendor.key_format,
    )


# harness's own vendors' upstreams (harness.vendors).
_UPSTREAMS = {vendor.name: _upstream_of(vendor) for vendor in BUILTIN_VENDORS}


def _upstreams() -> dict[str, _Upstream]:
    """Every vendor's upstream: harness's own, then those plugins registered with their
    wires (harness_register_wires)."""
    plugged = {v.name: _upstream_of(v) for v in plugin_vendors() if v.name not in _UPSTREAMS}
    return {**_UPSTREAMS, **plugged}


def _httpx() -> Any:
    try:
        import httpx2

        return httpx2
    except ImportError:  # pragma: no cover - openai 1.x/2.x environments
        import httpx

        return httpx


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
        # Per vendor: where its requests go (``upstream``, the scenario's base_url, is
        # ``vendor``'s; the others' come from their SDKs' variables) and its key. Read
        # now: the target gets dummies in the same environment later.
        self.specs = _upstreams()
        self.upstreams = {
            name: (
                (upstream if name == vendor and upstream else None)
                or (os.environ.get(spec.base_variable) if spec.base_variable else None)
                or spec.default
            ).rstrip("/")
            for name, spec in self.specs.items()
        }
        self.keys = {name: spec.key() for name, spec in self.specs.items()}
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
            uri = f"{_origin(self.upstreams[vendor])}{path}"
        else:
            prefix = self.specs[vendor].served_prefix
            suffix = path[len(prefix) :] if prefix and path.startswith(prefix + "/") else path
            uri = f"{self.upstreams[vendor]}{suffix}"
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
        spec, key = self.specs[vendor], self.keys[vendor]
        if vendor == GEMINI.name:
            from harness.providers.gemini import no_key

            refusal = no_key(_host(request.uri), key)
        else:
            refusal = no_key_refusal(_host(request.uri), key)
        if refusal is not None:
            # Refused before anything goes out, as the own loop refuses it; a 401 so that
            # the target's SDK gives up at once instead of retrying.
            self.refused = refusal
            return _error(scope["path"], 401, refusal, "recording_refused")
        httpx = _httpx()
        headers = {
            k.decode("latin-1"): v.decode("latin-1")
            for k, v in scope.get("headers", [])
            if k.decode("latin-1").lower() not in _NOT_FORWARDED
            and k.decode("latin-1").lower() != spec.key_header
        }
        headers["accept-encoding"] = "gzip, deflate"
        if key and spec.key_header:
            headers[spec.key_header] = spec.key_format.format(key)
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
        refused = _refused(vendor, spec, answer.status_code, content)
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


def _refused(vendor: str, spec: _Upstream, status: int, content: bytes) -> str | None:
    """The one line for a key the upstream refused, None for any other answer."""
    if vendor == GEMINI.name:
        from harness.providers.gemini import key_refused as gemini_refused

        return gemini_refused(status, content)
    if not spec.key_variables:
        return None
    variable = spec.key_variables[0]
    return key_refused(status, content, variable) if status in (401, 403) else None


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

    body = (wire_for(path) or OPENAI_CHAT).render_error(WireError(status, message, code))
    return status, [(b"content-type", b"application/json")], json.dumps(body).encode()
