"""What every recorded LLM source shares: its cassette session, opened at the first
request and saved when the run ends (docs/recording.md). ``provider: openai``,
``anthropic`` and ``gemini`` differ only in the SDK they drive.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from harness.errors import LLMError, RecordingRefused
from harness.project import project_relative

if TYPE_CHECKING:
    from harness.cassettes.session import CassetteSession
    from harness.llm.config import LLMConfig

__all__ = ["RecordedSource"]


class RecordedSource:
    """The cassette bookkeeping of an LLM source on a vendor's SDK."""

    def __init__(self, config: LLMConfig) -> None:
        self.config = config
        self.context = config.context
        self._session: CassetteSession | None = None
        # Why recording stopped with nothing written (the API refused the key), if it did.
        self.refused: str | None = None
        self._remaining: int | None = None
        self._stats: Any = None

    @property
    def uses_cassette(self) -> bool:
        """False under --disable-recording (live, nothing written)."""
        return not self.context.disable_recording

    @property
    def session(self) -> CassetteSession | None:
        """The open cassette session (None before the first request or when live)."""
        return self._session

    @property
    def cassette_path(self) -> Path:
        """Where this source's cassette is read and written."""
        from harness.cassettes.paths import resolve_cassette_path

        return resolve_cassette_path(self.config)

    def _open_session(self) -> CassetteSession | None:
        if not self.uses_cassette:
            return None
        if self._session is None:
            from harness.cassettes.session import CassetteSession

            path = self.cassette_path
            self._session = CassetteSession(
                path,
                record_mode=self.context.record_mode,
                match=self.config.match,
                match_ignore=tuple(self.config.match_ignore),
                scenario=self.context.scenario_id,
                shown_path=project_relative(path, self.context.project_root),
            )
            self._session_opened()
        return self._session

    def _session_opened(self) -> None:
        """Called when a new cassette session opens (state kept per session resets)."""

    def _cassette_error(
        self, exc: BaseException, call: int, session: CassetteSession | None
    ) -> LLMError | None:
        """The run's llm_error when ``exc`` (or what caused it) is the cassette's: a miss,
        or a recording refused (the run ends there; the scenario runner stops the whole
        recording). vcrpy raises from inside the transport and the SDKs let it through."""
        if session is None:
            return None
        from vcr.errors import CannotOverwriteExistingCassetteException

        cause: BaseException | None = exc
        while cause is not None:
            if isinstance(cause, CannotOverwriteExistingCassetteException):
                return session.miss_error(cause, call)
            if isinstance(cause, RecordingRefused):
                self.refused = str(cause)
                return LLMError(str(cause), type="recording_refused")
            cause = cause.__cause__ or cause.__context__
        return None

    @property
    def remaining(self) -> int | None:
        """Recorded interactions the run left unplayed (None when live)."""
        if self._session is not None:
            return self._session.remaining
        return self._remaining

    @property
    def stats(self) -> Any:
        """ReplayStats of the current (or last) cassette session: matching, playing, loading."""
        return self._session.stats if self._session is not None else self._stats

    def close(self) -> None:
        """Save the cassette if anything was recorded, and end the session."""
        session, self._session = self._session, None
        if session is not None:
            self._remaining = session.remaining
            self._stats = session.stats
            session.save()

    async def aclose(self) -> None:
        """``close()``: called by ``Agent.arun`` when a run ends (the LLM protocol's
        optional end-of-run call), so a recording is saved whoever started the run."""
        self.close()
