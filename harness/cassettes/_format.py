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

from harness._files import atomic_write
from harness._secrets import Scrubber, masked_repr

__all__ = [
    "CassetteFormatError",
    "LoadedInteraction",
    "ReadablePersister",
    "ReadableSerializer",
    "dump_cassette",
    "interaction_line",
    "load_cassette_file",
    "load_cassette_text",
    "readable_yaml",
]

try:  # libyaml when available: cassettes of long conversations are large
    _BaseDumper: Any = yaml.CSafeDumper
    _BaseLoader: Any = yaml.CSafeLoader
except AttributeError:  # pragma: no cover - depends on how PyYAML was built
    _BaseDumper = yaml.SafeDumper
    _BaseLoader = yaml.SafeLoader

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
    """A cassette file that cannot be read: ``FILE:LINE: problem`` once the file is known."""

    def __init__(self, problem: str, line: int | None = None, file: str | None = None) -> None:
        super().__init__(problem)
        self.problem = problem
        self.line = line
        self.file = file

    def in_file(self, file: str | Path) -> CassetteFormatError:
        """The same error, naming ``file``."""
        return CassetteFormatError(self.problem, self.line, str(file))

    def __str__(self) -> str:
        where = self.file or ""
        if self.line is not None:
            where = f"{where}:{self.line}" if where else f"line {self.line}"
        return f"{where}: {self.problem}" if where else self.problem


def _represent_str(dumper: Any, data: str) -> Any:
    if "\n" in data:
        # PyYAML falls back to a quoted scalar by itself when a literal block cannot
        # hold the text exactly (trailing spaces, \r): still correct, only less pretty.
        return dumper.represent_scalar("tag:yaml.org,2002:str", data, style="|")
    return dumper.represent_scalar("tag:yaml.org,2002:str", data)


def _literal_blocks(base: Any) -> Any:
    """A dumper like ``base`` writing multi-line strings (SSE bodies, long model text)
    as literal blocks."""
    dumper: Any = type(f"Readable{base.__name__}", (base,), {})
    dumper.add_representer(str, _represent_str)
    return dumper


# libyaml's emitter is fast, which large cassettes need, but it escapes characters
# outside the BMP (emoji) even with allow_unicode and wraps long quoted strings
# differently: files people edit by hand (frozen scenarios) use PyYAML's own emitter.
_FAST_DUMPER = _literal_blocks(_BaseDumper)
_PLAIN_DUMPER = _literal_blocks(yaml.SafeDumper)


def readable_yaml(data: Any, *, fast: bool = True) -> str:
    """``data`` as block-style YAML, multi-line strings as literal blocks, keys in order.

    ``fast``: libyaml's emitter (cassettes); False for PyYAML's, which writes emoji as
    they are (scenario files).
    """
    dumper = _FAST_DUMPER if fast else _PLAIN_DUMPER
    return yaml.dump(data, Dumper=dumper, sort_keys=False, allow_unicode=True, width=100)


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
        return readable_yaml(out)


# -- reading ------------------------------------------------------------------------------


@dataclass
class LoadedInteraction:
    """One interaction as vcrpy wants it, plus the parsed request body when it is JSON."""

    request: dict[str, Any]  # vcrpy Request._from_dict form (body: str | bytes | None)
    response: dict[str, Any]  # vcrpy response dict (body.string: bytes)
    request_json: Any = None


def _dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=_JSON_SEPARATORS)


class _Bad(Exception):
    """A structural problem in one interaction: the field's path and what is wrong."""

    def __init__(self, path: tuple[str, ...], message: str) -> None:
        super().__init__(message)
        self.path = path
        self.message = message


def _got(value: Any) -> str:
    return f"got {type(value).__name__} {masked_repr(value)}"


def _mapping(value: Any, path: tuple[str, ...], what: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise _Bad(path, f"expected {what}, {_got(value)}")
    return value


def _headers(value: Any, path: tuple[str, ...]) -> dict[str, list[str]]:
    """Headers as vcrpy wants them: name -> list of strings (numbers become strings)."""
    if value is None:
        return {}
    headers = _mapping(value, path, "a mapping of header names to lists of values")
    out: dict[str, list[str]] = {}
    for name, given in headers.items():
        values = given if isinstance(given, list) else [given]
        if not isinstance(name, str) or not all(
            isinstance(v, str | int | float) and not isinstance(v, bool) for v in values
        ):
            raise _Bad((*path, str(name)), f"expected a string or a list of strings, {_got(given)}")
        out[name] = [str(v) for v in values]
    return out


def _body_bytes(value: Any, path: tuple[str, ...]) -> str | bytes | None:
    """A raw body: text, bytes, or a file-like body of old vcrpy cassettes (as bytes)."""
    if value is None or isinstance(value, str | bytes):
        return value
    if hasattr(value, "getvalue"):  # vcrpy's loader rebuilds old BytesIO bodies
        return bytes(value.getvalue())
    raise _Bad(path, f"expected a string (or parsed_body: for JSON), {_got(value)}")


_REQUEST_FIELDS = ("method", "uri", "headers", "body", "parsed_body")


def _restore_request(value: Any) -> tuple[dict[str, Any], Any]:
    request = _mapping(value, ("request",), "a mapping (method, uri, headers, body)")
    for key in request:
        if key not in _REQUEST_FIELDS:
            raise _Bad(
                ("request", str(key)),
                "unknown field; a request has method, uri, headers and body (or parsed_body)",
            )
    for key in ("method", "uri"):
        if key not in request:
            raise _Bad(("request", key), "missing")
        if not isinstance(request[key], str):
            raise _Bad(("request", key), f"expected a string, {_got(request[key])}")
    if "body" in request and "parsed_body" in request:
        raise _Bad(("request", "parsed_body"), "give body or parsed_body, not both")
    request_json = None
    if "parsed_body" in request:
        request_json = request["parsed_body"]
        body: str | bytes | None = _dumps(request_json)
    else:
        body = _body_bytes(request.get("body"), ("request", "body"))
    restored = {
        "method": request["method"],
        "uri": request["uri"],
        "body": body,
        "headers": _headers(request.get("headers"), ("request", "headers")),
    }
    return restored, request_json


def _restore_response(value: Any) -> dict[str, Any]:
    response = dict(_mapping(value, ("response",), "a mapping (status, headers, body)"))
    if "status_code" in response and "status" not in response:
        # vcrpy's older httpx format: status_code and content.
        response = {
            "status": {"code": response["status_code"], "message": None},
            "headers": response.get("headers"),
            "body": {"string": response.get("content")},
        }
    status = _mapping(response.get("status"), ("response", "status"), "{code: N, message: ...}")
    code = status.get("code")
    if not isinstance(code, int) or isinstance(code, bool):
        raise _Bad(("response", "status", "code"), f"expected an HTTP status, {_got(code)}")
    message = status.get("message")
    if message is not None and not (isinstance(message, str) and message.isascii()):
        # vcrpy sends the reason phrase as ASCII bytes.
        raise _Bad(("response", "status", "message"), f"expected ASCII text, {_got(message)}")
    headers = _headers(response.get("headers"), ("response", "headers"))
    text: str | bytes | None
    if "parsed_body" in response:
        if "body" in response:
            raise _Bad(("response", "parsed_body"), "give body or parsed_body, not both")
        text = _dumps(response["parsed_body"]).encode("utf-8")
        # The length of re-dumped JSON differs from the recorded one.
        headers = _without(headers, "content-length")
        headers["content-length"] = [str(len(text))]
    else:
        body = response.get("body")
        if body is None:
            text = b""
        else:
            body = _mapping(body, ("response", "body"), "{string: ...} (or parsed_body: for JSON)")
            text = _body_bytes(body.get("string"), ("response", "body", "string"))
    if isinstance(text, str):
        text = text.encode("utf-8")
    restored = {
        "status": {"code": code, "message": message},
        "headers": headers,
        "body": {"string": text or b""},
    }
    # vcrpy's decoders keep a body that does not decompress as it is.
    return _decompress(restored)


def _restore(interaction: Any) -> LoadedInteraction:
    item = _mapping(interaction, (), "a mapping with request: and response:")
    for key in ("request", "response"):
        if key not in item:
            raise _Bad((key,), "missing")
    request, request_json = _restore_request(item["request"])
    response = _restore_response(item["response"])
    return LoadedInteraction(request=request, response=response, request_json=request_json)


def _compose(text: str) -> Any:
    try:
        return yaml.compose(text, Loader=_BaseLoader)
    except yaml.YAMLError:
        return None


def _node_line(node: Any, path: tuple[Any, ...]) -> tuple[int | None, bool]:
    """(the line of the node at ``path`` or of its nearest parent, whether it was found)."""
    line = None
    for key in path:
        if node is None:
            return line, False
        line = node.start_mark.line + 1
        if isinstance(node, yaml.MappingNode):
            node = next((v for k, v in node.value if getattr(k, "value", None) == key), None)
        elif isinstance(node, yaml.SequenceNode) and isinstance(key, int):
            node = node.value[key] if key < len(node.value) else None
        else:
            node = None
    if node is None:
        return line, False
    return node.start_mark.line + 1, True


def _line_of(text: str, path: tuple[Any, ...]) -> int | None:
    """The line of the node at ``path`` (or of its nearest parent) in the YAML ``text``.

    Only used to report an error: the file is composed a second time, with line marks.
    """
    node = _compose(text)
    return None if node is None else _node_line(node, path)[0]


def interaction_line(path: str | Path, index: int, *fields: tuple[str, ...]) -> int | None:
    """The line in the cassette file ``path`` of interaction ``index`` (0-based): of the
    first of ``fields`` (key paths, such as ``("request", "body")``) it holds, else of the
    interaction itself; None when the file no longer reads as YAML.

    Only used to report an error about a loaded interaction: the file is read and
    composed again, with line marks.
    """
    try:
        node = _compose(Path(path).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError):
        return None
    if node is None:
        return None
    for field in fields:
        line, found = _node_line(node, ("interactions", index, *field))
        if found:
            return line
    return _node_line(node, ("interactions", index))[0]


def _yaml_error(exc: yaml.YAMLError) -> CassetteFormatError:
    """One line from PyYAML's multi-line message, with the line number of the problem."""
    mark = getattr(exc, "problem_mark", None)
    problem = getattr(exc, "problem", None)
    if problem:
        context = getattr(exc, "context", None)
        message = f"{problem} ({context})" if context else problem
    else:
        message = " ".join(str(exc).split())
    return CassetteFormatError(
        f"not valid YAML: {message}", line=mark.line + 1 if mark is not None else None
    )


def load_cassette_text(text: str) -> list[LoadedInteraction]:
    """The interactions of a cassette's YAML text (harness's format or vcrpy's).

    Any problem is a CassetteFormatError with the line, the interaction and the field.
    """
    from vcr.serializers.yamlserializer import deserialize  # vcrpy's safe loader

    if not text.strip():
        raise CassetteFormatError("the cassette is empty (nothing has been recorded in it)")
    try:
        with _no_gc():
            data = deserialize(text)
    except yaml.YAMLError as exc:
        raise _yaml_error(exc) from None
    if not isinstance(data, dict) or not isinstance(data.get("interactions"), list):
        raise CassetteFormatError("not a vcrpy cassette (no `interactions:` list)")
    loaded = []
    for index, item in enumerate(data["interactions"]):
        try:
            loaded.append(_restore(item))
        except _Bad as bad:
            field = ".".join(bad.path)
            problem = f"interaction {index + 1}: " + (f"{field}: " if field else "") + bad.message
            line = _line_of(text, ("interactions", index, *bad.path))
            raise CassetteFormatError(problem, line=line) from None
    return loaded


def load_cassette_file(path: str | Path) -> list[LoadedInteraction]:
    """The interactions of a cassette file; CassetteFormatError names the file.

    OSError and UnicodeDecodeError come through for the caller to word.
    """
    path = Path(path)
    text = path.read_text(encoding="utf-8")
    try:
        return load_cassette_text(text)
    except CassetteFormatError as exc:
        raise exc.in_file(path) from None


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

        from harness._errors import NotWritten
        from harness._project import display_path

        text = serialize(cassette_dict, serializer)
        try:
            atomic_write(cassette_path, text)
        except OSError as exc:
            # A full disk is the machine's state, not a bug: one line, no traceback.
            raise NotWritten(
                f"cassette {display_path(cassette_path)} not written: {exc.strerror or exc}"
            ) from None
