"""A cassette in use by one run: vcrpy's Cassette with an index, record modes, misses.

vcrpy compares a request with every stored interaction (twice: "can I play it?",
then "play it"), so replaying a long cassette costs more per request the longer
it is. ``IndexedCassette`` keeps, per match key, a queue of the interactions not
played yet: finding and playing one is a dictionary lookup.
"""

from __future__ import annotations

import contextvars
import re
import time
from collections import deque
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from vcr.cassette import Cassette
from vcr.errors import CannotOverwriteExistingCassetteException, UnhandledHTTPRequestError
from vcr.matchers import method as match_method
from vcr.matchers import path as match_path
from vcr.record_mode import RecordMode
from vcr.request import Request

from harness._errors import LLMError, RecordingRefused
from harness._files import remove_leftovers
from harness._secrets import Scrubber
from harness._vendors import OPENAI, WireVendor
from harness.cassettes._format import (
    CassetteFormatError,
    ReadablePersister,
    ReadableSerializer,
    _no_gc,
    load_cassette_text,
)
from harness.cassettes._matching import BodyKeyer, body_diff, parse_json_body
from harness.llm._base import AGENT_ROLE, request_role

__all__ = [
    "CassetteSession",
    "IndexedCassette",
    "ReplayStats",
    "cassette_transport",
    "expected_key",
    "key_refused",
    "matched_path",
    "no_key_refusal",
]

# The match key of the request the LLM source is about to send, computed from the
# conversation it holds (incrementally); the cassette falls back to the body bytes.
expected_key: contextvars.ContextVar[str | None] = contextvars.ContextVar(
    "harness_cassette_expected_key", default=None
)

_VCR_MODES = {
    "none": RecordMode.NONE,
    "once": RecordMode.ONCE,
    "new_episodes": RecordMode.NEW_EPISODES,
    "all": RecordMode.ALL,
    # pytest-recording's `rewrite`: record everything into an empty cassette.
    "rewrite": RecordMode.ALL,
}


def matched_path(path: str) -> str:
    """A request's path as matching compares it: a Gemini API path without its version
    (google-genai 2.x calls /v1beta/models/..., 3.x /v1/models/..., the same request)."""
    found = _GEMINI_VERSION.match(path)
    return path[found.end() - len("/models/") :] if found else path


_GEMINI_VERSION = re.compile(r"^(?:/[^/]+)*?/v1(?:beta\d*|alpha\d*)?/models/(?=[^/]+:\w+$)")


@dataclass
class ReplayStats:
    """Time harness spent matching and playing, and loading (reported separately)."""

    requests: int = 0
    played: int = 0
    # Requests whose announced key missed and were keyed from their bytes instead.
    fallbacks: int = 0
    match_seconds: float = 0.0
    play_seconds: float = 0.0
    load_seconds: float = 0.0
    transport_seconds: float = 0.0


class IndexedCassette(Cassette):
    """vcrpy's Cassette with O(1) lookup of the next unplayed matching interaction."""

    def __init__(
        self,
        *args: Any,
        match: str = "body",
        keyer: BodyKeyer | None = None,
        skip_load: bool = False,
        stats: ReplayStats | None = None,
        **kwargs: Any,
    ) -> None:
        self.match = match
        self.keyer = keyer or BodyKeyer()
        self.skip_load = skip_load
        self.stats = stats or ReplayStats()
        self.file_found = False
        self.file_empty = False
        # match key -> indexes of unplayed interactions, in recorded order
        self._unplayed: dict[tuple[str, ...], deque[int]] = {}
        super().__init__(*args, **kwargs)

    # -- keys ----------------------------------------------------------------------------

    def key_of(
        self, request: Request, body_json: Any = None, *, incoming: bool = False
    ) -> tuple[str, ...]:
        """The index key of a request (cached on it).

        For an ``incoming`` request, the key the LLM source announced in
        ``expected_key`` is used when there is one, sparing a parse of the body.
        """
        cached = getattr(request, "_harness_key", None)
        if cached is not None:
            return cached
        # The role marker is part of every key: a judge's request only ever plays a
        # judge's interaction, and the agent's only the agent's, under both matchings.
        base = (request.method.upper(), matched_path(request.path), request_role(request.headers))
        if self.match == "sequential":
            key: tuple[str, ...] = base
        else:
            body_key = expected_key.get() if incoming else None
            if body_key is not None:
                request._harness_hinted = True
            else:
                body_key = (
                    self.keyer.key(body_json)
                    if body_json is not None
                    else self.keyer.key_of_bytes(request.body)
                )
            key = (*base, body_key)
        request._harness_key = key
        return key

    def _add(self, index: int, body_json: Any = None) -> None:
        request = self.data[index][0]
        # The parsed body is used for the key and then dropped: only the bytes stay.
        # Millions of small dicts would make every garbage collection during the
        # replay scan the whole cassette, and a miss report can parse one body again.
        self._unplayed.setdefault(self.key_of(request, body_json), deque()).append(index)

    # -- vcrpy's lookup API, indexed -------------------------------------------------------

    def append(self, request: Request, response: Any) -> None:
        """Record an interaction. It is not indexed: an identical request later in the
        same recording is another attempt (an SDK's retry after a 429, a question asked
        twice), sent upstream and recorded in turn, and replay plays them in order."""
        before = len(self.data)
        super().append(request, response)
        if len(self.data) > before:
            # What is stored is keyed by its bytes, as it will be when loaded again.
            self.data[before][0].__dict__.pop("_harness_key", None)

    def _responses(self, request: Request) -> Any:
        for index in self._unplayed.get(self.key_of(request, incoming=True), ()):
            yield index, self.data[index][1]

    def __contains__(self, request: Request) -> bool:
        started = time.perf_counter()
        self.stats.requests += 1
        key = self.key_of(request, incoming=True)
        found = bool(self._unplayed.get(key))
        if not found and request.__dict__.pop("_harness_hinted", False) and self.match == "body":
            # The announced key is a shortcut, not the truth: before calling this a
            # miss, key the bytes actually sent.
            key = (*key[:-1], self.keyer.key_of_bytes(request.body))
            request._harness_key = key
            self.stats.fallbacks += 1
            found = bool(self._unplayed.get(key))
        self.stats.match_seconds += time.perf_counter() - started
        return found

    def play_response(self, request: Request) -> Any:
        """The first unplayed interaction matching ``request``, marked as played."""
        started = time.perf_counter()
        queue = self._unplayed.get(self.key_of(request, incoming=True))
        if not queue:
            raise UnhandledHTTPRequestError(
                f"The cassette ({self._path!r}) doesn't contain the request ({request!r}) asked for"
            )
        index = queue.popleft()
        self.play_counts[index] += 1
        if index < self._loaded_count:
            self._played_interactions.append(self.data[index])
        self.stats.played += 1
        self.stats.play_seconds += time.perf_counter() - started
        return self.data[index][1]

    def rewind(self) -> None:
        """Make every interaction playable again."""
        super().rewind()
        self._unplayed.clear()
        for index in range(len(self.data)):
            self._add(index)

    # -- loading ----------------------------------------------------------------------------

    def _load(self) -> None:
        if self.skip_load:
            return
        path = Path(self._path)
        # What a recording killed before its rename left beside the cassette.
        remove_leftovers(path)
        if not path.is_file():
            return
        started = time.perf_counter()
        text = path.read_text(encoding="utf-8")
        if not text.strip():  # vcrpy's rule: an empty file is a cassette still to record
            self.file_empty = True
            return
        with _no_gc():
            self._add_loaded(load_cassette_text(text))
        self._loaded_count = len(self.data)
        self.dirty = False
        self.rewound = True
        self.file_found = True
        self.stats.load_seconds += time.perf_counter() - started

    def _add_loaded(self, loaded: list[Any]) -> None:
        scrubber = Scrubber()
        for item in loaded:
            if scrubber.values:
                item.request = scrubber.restore(item.request)
                item.request_json = scrubber.restore(item.request_json)
                item.response = scrubber.restore(item.response)
            # No deepcopy or filters: the interactions were built from the file just now.
            self.data.append((Request._from_dict(item.request), item.response))
            index = len(self.data) - 1
            body_json = item.request_json
            if body_json is None and self.match == "body":
                body_json = parse_json_body(item.request.get("body"))
            self._add(index, body_json)
            self._old_interactions.append(self.data[index])

    # -- for miss reports ---------------------------------------------------------------------

    def request_json(self, index: int) -> Any:
        """The parsed JSON body of stored interaction ``index`` (or its raw body)."""
        body = self.data[index][0].body
        parsed = parse_json_body(body)
        return parsed if parsed is not None else body

    @property
    def unplayed(self) -> int:
        """Loaded interactions of the agent not played yet (a judge's are not counted:
        judges run after the run, and `script_consumed` is about the agent's replies)."""
        return sum(
            1
            for i in range(self._loaded_count)
            if not self.play_counts[i] and request_role(self.data[i][0].headers) == AGENT_ROLE
        )


def _role_matcher(r1: Request, r2: Request) -> None:
    """vcrpy matcher: the agent's requests and a judge's never match each other."""
    assert request_role(r1.headers) == request_role(r2.headers), "the request roles differ"


def _body_matcher(r1: Request, r2: Request) -> None:
    """vcrpy matcher over the cached index keys (used when vcrpy compares two requests)."""
    k1 = getattr(r1, "_harness_key", None)
    k2 = getattr(r2, "_harness_key", None)
    if k1 is not None and k2 is not None:
        assert k1[-1] == k2[-1], "the request bodies differ"
        return
    keyer = BodyKeyer()
    assert keyer.key_of_bytes(r1.body) == keyer.key_of_bytes(r2.body), "the request bodies differ"


class CassetteSession:
    """One run's use of one cassette: load once, play or record, save at the end."""

    def __init__(
        self,
        path: Path,
        *,
        record_mode: str = "none",
        match: str = "body",
        match_ignore: tuple[str, ...] | list[str] = (),
        scenario: str = "",
        shown_path: str | None = None,
    ) -> None:
        if record_mode not in _VCR_MODES:
            raise LLMError(
                f"unknown record mode {record_mode!r}; use one of {', '.join(_VCR_MODES)}",
                type="cassette_error",
            )
        self.path = Path(path)
        self.shown_path = shown_path or str(path)
        self.record_mode = record_mode
        self.match = match
        self.scenario = scenario
        self.keyer = BodyKeyer(match_ignore)
        self.stats = ReplayStats()
        self.requests_sent = 0
        # Set when recording stopped because the API refused the key: nothing is saved.
        self.refused: str | None = None
        matchers = (
            (match_method, match_path, _role_matcher)
            if match == "sequential"
            else (match_method, match_path, _role_matcher, _body_matcher)
        )
        try:
            self.cassette = IndexedCassette.load(
                path=str(self.path),
                serializer=ReadableSerializer,
                persister=ReadablePersister,
                record_mode=_VCR_MODES[record_mode],
                match_on=matchers,
                match=match,
                keyer=self.keyer,
                skip_load=record_mode == "rewrite",
                stats=self.stats,
            )
        except CassetteFormatError as exc:
            raise LLMError(str(exc.in_file(self.shown_path)), type="cassette_error") from None
        except OSError as exc:
            reason = exc.strerror or exc
            raise LLMError(
                f"cannot read cassette {self.shown_path}: {reason}", type="cassette_error"
            ) from None
        except UnicodeDecodeError as exc:
            raise LLMError(
                f"{self.shown_path}: the cassette is not UTF-8 text ({exc.reason} at byte "
                f"{exc.start})",
                type="cassette_error",
            ) from None

    @property
    def replays_only(self) -> bool:
        """Whether a miss is an error (nothing may reach the network)."""
        return bool(self.cassette.write_protected)

    @property
    def remaining(self) -> int:
        """Recorded interactions this run did not play."""
        if self.record_mode in ("all", "rewrite"):
            return 0
        return self.cassette.unplayed

    def save(self) -> None:
        """Write the cassette if anything was recorded (atomically, secrets scrubbed).

        Not after a refused key: what was recorded before it belongs to a run that
        could not finish.
        """
        if self.cassette.dirty and self.refused is None:
            self.cassette._save()

    # -- misses -------------------------------------------------------------------------------

    def _nearest(self, request: Request, sent: Any) -> int | None:
        """The stored interaction most like ``request`` (same method and path)."""
        method, path = request.method.upper(), matched_path(request.path)
        role = request_role(request.headers)
        candidates = [
            i
            for i, (stored, _) in enumerate(self.cassette.data)
            if stored.method.upper() == method
            and matched_path(stored.path) == path
            and request_role(stored.headers) == role
        ]
        if not candidates:
            return None
        position = self.requests_sent - 1

        def score(index: int) -> tuple[int, int, int, int]:
            recorded = self.cassette.request_json(index)
            unplayed = int(not self.cassette.play_counts[index])
            return (_similarity(recorded, sent), unplayed, -abs(index - position), -index)

        return max(candidates, key=score)

    def miss_error(self, exc: CannotOverwriteExistingCassetteException, call: int) -> LLMError:
        """The llm_error for a request the cassette cannot answer, with a diff."""
        request = exc.failed_request
        sent = parse_json_body(request.body)
        if sent is None:
            sent = request.body
        role = request_role(request.headers)
        judge = role != AGENT_ROLE
        what = f"{role} request {call} of the scenario" if judge else f"request {call} of the run"
        where = (
            f"cassette miss: {what}"
            + (f" (scenario {self.scenario})" if self.scenario else "")
            + f" has no unplayed match in {self.shown_path} "
            f"(match: {self.match}, record mode: {self.record_mode})."
        )
        if not self.cassette.file_found and self.record_mode != "rewrite":
            state = "is empty" if self.cassette.file_empty else "does not exist"
            detail = (
                f"The cassette file {state}. Record it with --record-mode once (`harness record`)."
            )
            return LLMError(f"{where}\n{detail}", type="cassette_miss")
        nearest = self._nearest(request, sent)
        paths = sorted(
            {s.path for s, _ in self.cassette.data if s.method.upper() == request.method.upper()}
        )
        hint = (
            "If the change is intended, re-record: --record-mode new_episodes adds the new "
            "requests, --record-mode rewrite records the cassette again."
        )
        if nearest is None:
            detail = (
                f"No recorded {role + ' ' if judge else ''}request is a {request.method} to "
                f"{request.path}; "
                f"the cassette holds {len(self.cassette.data)} interaction(s)."
            )
            if paths and request.path not in paths:
                # Recorded under another path prefix: nothing to re-record.
                detail += f" Its {request.method} requests were recorded at {', '.join(paths)}."
                hint = (
                    "Send the requests to the recorded paths: a client's base URL is the "
                    "part of the path before /chat/completions or /responses."
                )
        else:
            played = " (already played)" if self.cassette.play_counts[nearest] else ""
            diff = body_diff(
                self.cassette.request_json(nearest),
                sent,
                recorded_name=f"recorded interaction {nearest + 1}{played}",
                sent_name=f"request {call}",
            )
            detail = f"Nearest recorded request: interaction {nearest + 1}{played}.\n{diff}"
        message = Scrubber().text(f"{where}\n{detail}\n{hint}")
        return LLMError(message, type="cassette_miss")


def _similarity(recorded: Any, sent: Any) -> int:
    """How alike two bodies are: equal top-level fields, then the common conversation prefix."""
    if not isinstance(recorded, dict) or not isinstance(sent, dict):
        return int(recorded == sent)
    score = sum(
        1 for k, v in sent.items() if k not in ("messages", "input") and recorded.get(k) == v
    )
    for field_name in ("messages", "input"):
        a, b = recorded.get(field_name), sent.get(field_name)
        if isinstance(a, list) and isinstance(b, list):
            common = 0
            for x, y in zip(a, b, strict=False):
                if x != y:
                    break
                common += 1
            score += 100 * common
    return score


def no_key_refusal(vendor: WireVendor, host: str | None, key: str | None) -> str | None:
    """Why recording must not send a request to ``host`` for ``vendor``'s client: no key,
    and ``host`` is a model vendor's public API, which refuses a request without one (else
    None). The own loop's transport and a target's recording proxy both ask it."""
    if key or host is None or host not in _public_hosts():
        return None
    unset = ("it is not set", "neither is set")[len(vendor.key_variables) > 1]
    return (
        f"recording needs {vendor.key_named}: {unset}, and {host} refuses requests without "
        f"a key; nothing was recorded (set the key, or base_url / "
        f"{vendor.base_url_variable} for another endpoint)"
    )


def _public_hosts() -> set[str | None]:
    from harness._modelwires import vendors

    return {vendor.host for vendor in vendors()}


def key_refused(vendor: WireVendor, status: int, content: bytes | str | None) -> str | None:
    """The one line for a key ``vendor``'s API refused (401, 403, or an error whose
    reason is one of its ``refused_reasons``), with the API's own message; None for any
    other answer."""
    import json

    try:
        error = json.loads(content or b"").get("error", {})
    except (ValueError, AttributeError):
        error = {}
    error = error if isinstance(error, dict) else {}
    details = error.get("details")
    details = details if isinstance(details, list) else []
    reasons = {d.get("reason") for d in details if isinstance(d, dict)}
    if not vendor.key_variables or (
        status not in (401, 403) and not reasons & set(vendor.refused_reasons)
    ):
        return None
    detail = error.get("message")
    # An upstream may echo the key it refused (or an org id): masked like any output.
    from harness._secrets import Scrubber

    said = f": {Scrubber().text(detail)}" if isinstance(detail, str) and detail else ""
    account = " / ".join(vendor.account_variables)
    also = f" (and {account})" if account else ""
    return (
        f"the API refused the key (HTTP {status}{said}); nothing was recorded: "
        f"check {vendor.key_named}{also}"
    )


async def _error_answer(
    httpx: Any, session: CassetteSession, request: Any, response: Any, refused_by: Any
) -> Any:
    """An error answer to record, read whole; RecordingRefused when it refuses the key."""
    # The body tells a refused key from another error (Gemini's is a 400). vcrpy reads
    # the raw stream after this, and a stream reads once: it gets the same bytes again.
    raw = b"".join([chunk async for chunk in response.aiter_raw()])
    await response.aclose()
    decoded = httpx.Response(response.status_code, headers=response.headers, content=raw)
    refused = refused_by(response.status_code, decoded.content)
    if refused is not None:
        # Never written to a cassette: every later run would replay the refusal.
        session.refused = refused
        raise RecordingRefused(refused)
    return httpx.Response(
        response.status_code,
        headers=response.headers,
        stream=httpx.ByteStream(raw),
        request=request,
        extensions=response.extensions,
    )


def cassette_transport(
    session: CassetteSession, httpx: Any, *, vendor: WireVendor = OPENAI, **kwargs: Any
) -> Any:
    """An async HTTP transport that goes through ``session``'s cassette.

    It uses vcrpy's own httpx stub on this one transport instead of patching the
    transport classes process-wide: only the LLM source's requests are recorded or
    replayed, and two runs never share a patch. A request is not recorded without
    ``vendor``'s key (``no_key_refusal``), nor an answer refusing the key
    (``key_refused``): neither is ever written.
    """
    import functools

    def refusal(host: str | None) -> str | None:
        return no_key_refusal(vendor, host, vendor.key())

    def refused_by(status: int, content: bytes) -> str | None:
        return key_refused(vendor, status, content)

    from vcr.stubs.httpx_stubs import vcr_handle_async_request

    transport = httpx.AsyncHTTPTransport(**kwargs)
    network = type(transport).handle_async_request

    async def real(self: Any, request: Any) -> Any:
        # Called by vcrpy only to record a request the cassette lacks.
        why = refusal(request.url.host)
        if why is not None:
            raise RecordingRefused(why)
        response = await network(self, request)
        if response.status_code < 400:
            return response
        return await _error_answer(httpx, session, request, response, refused_by)

    stub = functools.partial(vcr_handle_async_request(session.cassette, real, httpx), transport)
    stats = session.stats

    async def handle_async_request(request: Any) -> Any:
        started = time.perf_counter()
        try:
            return await stub(request)
        finally:
            # Under replay this is all cassette work: reading the request, matching,
            # playing and building the response (recording adds the network time).
            stats.transport_seconds += time.perf_counter() - started

    transport.handle_async_request = handle_async_request
    return transport
