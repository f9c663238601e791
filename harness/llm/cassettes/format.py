"""The cassette file: readable YAML in, vcrpy's interaction dicts out, and back.

On disk, bodies are decompressed, JSON bodies are a structured ``parsed_body``
mapping (the convention of pydantic-ai's test suite) and other text bodies, such as
Server-Sent Events, are literal ``|`` blocks. Vanilla vcrpy cassettes (JSON string
bodies, gzip ``!!binary`` bodies) load as well. Secrets are scrubbed and files are
written atomically with normal permissions.
"""

from __future__ import annotations

import contextlib
import gc
import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from harness.files import atomic_write
from harness.secrets import Scrubber

__all__ = [
    "CassetteFormatError",
    "LoadedInteraction",
    "ReadablePersister",
    "ReadableSerializer",
    "dump_cassette",
    "load_cassette_file",
    "load_cassette_text",
]

try:  # libyaml when available: cassettes of long conversations are large
    _BaseDumper: Any = yaml.CSafeDumper
except AttributeError:  # pragma: no cover - depends on how PyYAML was built
    _BaseDumper = yaml.SafeDumper

_JSON_SEPARATORS = (",", ":")
_COMPRESSED = ("gzip", "deflate", "br")


@contextlib.contextmanager
def _no_gc() -> Iterator[None]:
    """Pause the cyclic garbage collector while YAML builds or walks millions of objects.

    A long conversation's cassette holds millions of YAML nodes; the collector would
    scan all of them again and again as they are created (it halves load time), and
    none of them form cycles.
    """
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


class CassetteFormatError(ValueError):
    """A cassette file that cannot be read."""


class _Dumper(_BaseDumper):  # type: ignore[misc, valid-type]
    """Multi-line strings (SSE bodies, long model text) as literal blocks."""


def _represent_str(dumper: Any, data: str) -> Any:
    if "\n" in data:
        # PyYAML falls back to a quoted scalar by itself when a literal block cannot
        # hold the text exactly (trailing spaces, \r): still correct, only less pretty.
        return dumper.represent_scalar("tag:yaml.org,2002:str", data, style="|")
    return dumper.represent_scalar("tag:yaml.org,2002:str", data)


_Dumper.add_representer(str, _represent_str)


def _header(headers: dict[str, Any], name: str) -> list[str] | None:
    for key, value in headers.items():
        if key.lower() == name:
            return value if isinstance(value, list) else [value]
    return None


def _without(headers: dict[str, Any], *names: str) -> dict[str, Any]:
    return {k: v for k, v in headers.items() if k.lower() not in names}


def _decompress(response: dict[str, Any]) -> dict[str, Any]:
    """The response with a gzip/deflate/br body decompressed and its header dropped."""
    body = (response.get("body") or {}).get("string")
    encoding = _header(response.get("headers") or {}, "content-encoding")
    if not isinstance(body, bytes) or not encoding or encoding[0] not in _COMPRESSED:
        return response
    from vcr.filters import decode_response  # vcrpy's decoders: gzip, deflate, br when installed

    return decode_response(response)


def _json_mapping(text: str | bytes | None) -> Any:
    """The parsed JSON object or array in ``text``, or None."""
    if text is None:
        return None
    try:
        value = json.loads(text)
    except (ValueError, UnicodeDecodeError):
        return None
    return value if isinstance(value, dict | list) else None


def _as_text(body: Any) -> Any:
    if isinstance(body, bytes):
        try:
            return body.decode("utf-8")
        except UnicodeDecodeError:
            return body
    return body


# -- writing ------------------------------------------------------------------------------


def _readable_request(request: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {"method": request.get("method"), "uri": request.get("uri")}
    out["headers"] = request.get("headers") or {}
    body = _as_text(request.get("body"))
    parsed = _json_mapping(body) if isinstance(body, str) else None
    if parsed is not None:
        out["parsed_body"] = parsed
    else:
        out["body"] = body
    return out


def _readable_response(response: dict[str, Any]) -> dict[str, Any]:
    response = _decompress(response)
    headers = response.get("headers") or {}
    out: dict[str, Any] = {"status": response.get("status")}
    body = _as_text((response.get("body") or {}).get("string"))
    content_type = (_header(headers, "content-type") or [""])[0]
    parsed = _json_mapping(body) if isinstance(body, str) and "json" in content_type else None
    if parsed is not None:
        # The length of re-dumped JSON differs: it is recomputed on load.
        out["headers"] = _without(headers, "content-length")
        out["parsed_body"] = parsed
    else:
        out["headers"] = headers
        out["body"] = {"string": body}
    return out


def dump_cassette(data: dict[str, Any], scrubber: Scrubber | None = None) -> str:
    """The readable, scrubbed YAML text of vcrpy's serialized cassette dict."""
    scrubber = scrubber or Scrubber()
    interactions = []
    for interaction in data.get("interactions", []):
        readable = {
            "request": _readable_request(interaction.get("request") or {}),
            "response": _readable_response(interaction.get("response") or {}),
        }
        interactions.append(scrubber.interaction(readable))
    out: dict[str, Any] = {"version": data.get("version", 1), "interactions": interactions}
    if data.get("metadata"):
        out["metadata"] = scrubber.value(data["metadata"])
    with _no_gc():
        return yaml.dump(out, Dumper=_Dumper, sort_keys=False, allow_unicode=True, width=100)


# -- reading ------------------------------------------------------------------------------


@dataclass
class LoadedInteraction:
    """One interaction as vcrpy wants it, plus the parsed request body when it is JSON."""

    request: dict[str, Any]  # vcrpy Request._from_dict form (body: str | bytes | None)
    response: dict[str, Any]  # vcrpy response dict (body.string: bytes)
    request_json: Any = None


def _dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=_JSON_SEPARATORS)


def _restore(interaction: dict[str, Any], number: int) -> LoadedInteraction:
    try:
        request = dict(interaction["request"])
        response = dict(interaction["response"])
    except (KeyError, TypeError):
        raise CassetteFormatError(f"interaction {number} has no request or response") from None
    request_json = None
    if "parsed_body" in request:
        request_json = request.pop("parsed_body")
        request["body"] = _dumps(request_json)
    headers = dict(response.get("headers") or {})
    if "parsed_body" in response:
        text = _dumps(response.pop("parsed_body")).encode("utf-8")
        headers = _without(headers, "content-length")
        headers["content-length"] = [str(len(text))]
        response["body"] = {"string": text}
    else:
        body = dict(response.get("body") or {})
        if isinstance(body.get("string"), str):
            body["string"] = body["string"].encode("utf-8")
        response["body"] = body
    response["headers"] = headers
    response = _decompress(response)
    request.setdefault("body", None)
    request.setdefault("headers", {})
    return LoadedInteraction(request=request, response=response, request_json=request_json)


def load_cassette_text(text: str) -> list[LoadedInteraction]:
    """The interactions of a cassette's YAML text (harness's format or vcrpy's)."""
    from vcr.serializers.yamlserializer import deserialize  # vcrpy's safe loader

    try:
        with _no_gc():
            data = deserialize(text)
    except yaml.YAMLError as exc:
        raise CassetteFormatError(f"not valid YAML: {exc}") from None
    if not isinstance(data, dict) or not isinstance(data.get("interactions"), list):
        raise CassetteFormatError("not a vcrpy cassette (no `interactions:` list)")
    return [_restore(item, n) for n, item in enumerate(data["interactions"], 1)]


def load_cassette_file(path: str | Path) -> list[LoadedInteraction]:
    """The interactions of a cassette file; CassetteFormatError names the file."""
    path = Path(path)
    text = path.read_text(encoding="utf-8")
    try:
        return load_cassette_text(text)
    except CassetteFormatError as exc:
        raise CassetteFormatError(f"{path}: {exc}") from None


# -- vcrpy plug-ins ------------------------------------------------------------------------


class ReadableSerializer:
    """A vcrpy serializer writing harness's readable format (and reading any cassette)."""

    @staticmethod
    def serialize(cassette_dict: dict[str, Any]) -> str:
        """YAML text of vcrpy's cassette dict (secrets scrubbed)."""
        return dump_cassette(cassette_dict)

    @staticmethod
    def deserialize(cassette_string: str) -> dict[str, Any]:
        """vcrpy's cassette dict, bodies restored to strings."""
        interactions = load_cassette_text(cassette_string)
        return {
            "version": 1,
            "interactions": [{"request": i.request, "response": i.response} for i in interactions],
        }


class ReadablePersister:
    """vcrpy's filesystem persister, writing through a temporary file and a rename."""

    @classmethod
    def load_cassette(cls, cassette_path: str | Path, serializer: Any) -> Any:
        """Delegate to vcrpy's own loader (used only by plain vcrpy cassettes)."""
        from vcr.persisters.filesystem import FilesystemPersister

        return FilesystemPersister.load_cassette(cassette_path, serializer)

    @staticmethod
    def save_cassette(
        cassette_path: str | Path, cassette_dict: dict[str, Any], serializer: Any
    ) -> None:
        """Serialize and write atomically (mode 0644)."""
        from vcr.serialize import serialize

        atomic_write(cassette_path, serialize(cassette_dict, serializer))
