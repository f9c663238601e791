"""The model APIs this process knows: the wires plugins register through
``harness_register_wires`` (the four built-in ones by this module, an ordinary built-in
plugin), found by a request's path or by name, and each one's vendor: where its API lives
and which variables, header and query parameters hold its key
(docs/plugins.md#a-model-api-from-a-plugin).

Everything that speaks to or about a model finds its wire and its vendor here, the
built-ins' as a plugin's: ``harness serve`` routes the wires' paths, the external
observer and the recording proxy read requests with them, cassette matching hashes their
conversation fields, freeze reads recordings with them; the recording proxy, a target's
environment and the cassettes' key checks read the vendors. A request names no project,
so the wires of every plugin set this process discovered count (the built-ins' set
first); a set's wires are read from its plugins when first needed (a scripted run never
loads a wire). Registering a vendor also adds its key's variables, header and query
parameters to the names ``harness._secrets`` masks, for the process.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from harness._vendors import WireVendor

if TYPE_CHECKING:
    from collections.abc import Mapping

    from harness.wires._neutral import Wire

__all__ = [
    "WireVendor",
    "counted_paths",
    "error_wire",
    "harness_register_wires",
    "item_fields",
    "vendor_for",
    "vendor_of",
    "vendors",
    "wire_for",
    "wire_named",
    "wires",
    "wires_of_field",
]


def harness_register_wires(register: Callable[..., None]) -> None:
    """The built-in wires, each with its vendor (``harness._vendors``): Chat Completions and
    the Responses API (OpenAI's), Anthropic Messages, Gemini."""
    from harness._vendors import ANTHROPIC, GEMINI, OPENAI
    from harness.wires._registry import ANTHROPIC_MESSAGES, OPENAI_CHAT, OPENAI_RESPONSES
    from harness.wires._registry import GEMINI as GEMINI_WIRE

    register(OPENAI_CHAT, vendor=OPENAI)
    register(OPENAI_RESPONSES, vendor=OPENAI)
    register(ANTHROPIC_MESSAGES, vendor=ANTHROPIC)
    register(GEMINI_WIRE, vendor=GEMINI)


@dataclass
class _Known:
    """The wires of the plugin sets discovered so far, in order, and their vendors (by
    wire name; and each vendor once, by its name, the first registered of a name kept)."""

    wires: tuple[Wire, ...]
    vendors: dict[str, WireVendor]
    item_fields: tuple[str, ...] = ()
    of_field: dict[str, list[Wire]] = field(default_factory=dict)
    by_name: dict[str, WireVendor] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.item_fields = tuple(dict.fromkeys(wire.items_field for wire in self.wires))
        self.of_field = {f: [w for w in self.wires if w.items_field == f] for f in self.item_fields}
        for vendor in self.vendors.values():
            self.by_name.setdefault(vendor.name, vendor)


# The registries the known wires were read from (held, so that none is freed and its id
# reused by a later set's), and what was read.
_cache: dict[str, Any] = {"registries": [], "known": None}


def _known() -> _Known:
    from harness._plugins import discovery

    registries = [plugins.registry("wires") for plugins in discovery.sets()]
    held = _cache["registries"]
    if len(held) == len(registries) and all(a is b for a, b in zip(held, registries, strict=True)):
        known: _Known = _cache["known"]
        return known
    found: dict[str, Wire] = {}
    vendors: dict[str, WireVendor] = {}
    for registry in registries:
        for name, (wire, vendor) in registry.items():
            if name not in found:
                found[name] = wire
                if vendor is not None:
                    vendors[name] = vendor
    known = _Known(tuple(found.values()), vendors)
    _mask(vendors.values())
    _cache.update(registries=registries, known=known)
    return known


def _mask(vendors: Any) -> None:
    from harness._secrets import add_secret_names

    for vendor in vendors:
        add_secret_names(
            variables=(*vendor.key_variables, *vendor.secret_variables, *vendor.account_variables),
            request_headers=(
                *((vendor.key_header,) if vendor.key_header else ()),
                *vendor.secret_headers,
            ),
            params=vendor.key_params,
        )


def wires() -> tuple[Wire, ...]:
    """Every wire registered, the built-ins first."""
    return _known().wires


def wire_for(path: str) -> Wire | None:
    """The wire of a request to ``path`` (any prefix before the API's own path), or None
    for a path that is no model API's (``GET /v1/models``, say)."""
    for wire in _known().wires:
        if wire.serves(path):
            return wire
    return None


def wire_named(api: str) -> Wire:
    """The wire whose short name (``chat``, ``messages``...) or name (``openai-chat``) is
    ``api``."""
    for wire in _known().wires:
        if api in (wire.api, wire.name):
            return wire
    raise KeyError(f"no model wire is called {api!r}")


def vendor_for(wire: Wire) -> WireVendor | None:
    """The vendor registered with ``wire`` (None for a wire registered without one)."""
    return _known().vendors.get(wire.name)


def vendors() -> list[WireVendor]:
    """The vendors registered with the wires, each once, the built-ins first."""
    return list(_known().by_name.values())


def vendor_of(path: str, headers: Mapping[str, str]) -> WireVendor:
    """Whose API a request to ``path`` is: its wire's vendor; for a request no wire reads
    (``GET /v1/models/{id}``, which OpenAI, Anthropic and Gemini share), the vendor that
    alone uses the path's prefix (``own_paths``), else the one whose SDK alone sends one of
    the ``headers`` (``client_headers``; lower-case names, an ASGI scope's or a Starlette
    request's), else the first registered (OpenAI)."""
    known = _known()
    wire = wire_for(path)
    vendor = known.vendors.get(wire.name) if wire is not None else None
    if vendor is not None:
        return vendor
    listed = list(known.by_name.values())
    for vendor in listed:
        if path.startswith(vendor.own_paths):
            return vendor
    for vendor in listed:
        if any(header in headers for header in vendor.client_headers):
            return vendor
    return listed[0]


def error_wire(path: str) -> Wire | None:
    """The wire whose form an error answer to ``path`` takes: the path's wire, else the
    first wire of the vendor whose own path it is (Anthropic's for its
    ``/v1/messages/count_tokens``); None for any other path."""
    known = _known()
    wire = wire_for(path)
    if wire is not None:
        return wire
    for candidate in known.wires:
        vendor = known.vendors.get(candidate.name)
        if vendor is not None and any(prefix in path for prefix in vendor.own_paths):
            return candidate
    return None


def counted_paths() -> list[tuple[str, Wire]]:
    """The routes where a wire counts a request's input tokens (``count_paths``:
    Anthropic's ``/v1/messages/count_tokens``), each with its wire."""
    return [(path, wire) for wire in _known().wires for path in getattr(wire, "count_paths", ())]


def item_fields() -> tuple[str, ...]:
    """The request fields that hold a conversation, one per wire (``messages``...)."""
    return _known().item_fields


def wires_of_field(name: str) -> list[Wire]:
    """The wires whose conversation is in the request field ``name``."""
    return _known().of_field.get(name, [])
