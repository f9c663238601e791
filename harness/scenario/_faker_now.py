"""Faker whose date and time provider lives at a fixed "now".

Faker picks dates between 1970 (or ``-30y``) and the machine's clock, so a seeded
``faker.date_between()`` or ``faker.day_of_week()`` gives another value as the calendar
moves, and stub results stop being reproducible. Faker has no setting for its "now"; it
reads the clock in a few helpers and in the "this century / decade / year / month" and
date-of-birth methods. A provider subclass overriding exactly those (added with Faker's
own ``add_provider``, which lets a provider replace methods) reads NOW instead, for every
scenario; nothing global is patched.
"""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from faker.providers.date_time import Provider as _DateTimeProvider
else:
    # The overrides are mixed into the Faker's own provider class at run time.
    _DateTimeProvider = object

__all__ = ["NOW", "fixed_now_faker"]

# Stub templates' "now" (docs/scenarios.md, "Template context").
NOW = datetime(2025, 1, 1, tzinfo=UTC)


def _ts(moment: datetime) -> int:
    from faker.providers.date_time import datetime_to_timestamp

    return datetime_to_timestamp(moment)


def _period(now: Any, years: int) -> tuple[Any, Any]:
    """The century (100), decade (10), year (1) or month (0) ``now`` lies in."""
    if years:
        start = now.replace(year=now.year - now.year % years, month=1, day=1)
        end = start.replace(year=start.year + years)
    else:
        start = now.replace(day=1)
        month = start.month % 12 + 1
        end = start.replace(year=start.year + (month == 1), month=month)
    if isinstance(start, datetime):
        start = start.replace(hour=0, minute=0, second=0, microsecond=0)
        end = end.replace(hour=0, minute=0, second=0, microsecond=0)
    return start, end


class _FixedNow(_DateTimeProvider):
    """Overrides of faker.providers.date_time.Provider that read NOW, not the clock."""

    @classmethod
    def _now(cls, tzinfo: Any = None) -> datetime:
        # Faker's naive "now" is local time, read as UTC by its timestamps: NOW's UTC face.
        return NOW.astimezone(tzinfo) if tzinfo is not None else NOW.replace(tzinfo=None)

    @classmethod
    def _parse_end_datetime(cls, value: Any) -> int:
        return _ts(cls._now()) if value is None else cls._parse_date_time(value)

    @classmethod
    def _parse_date_time(cls, value: Any, tzinfo: Any = None) -> int:
        now = cls._now(tzinfo)
        if isinstance(value, timedelta):
            return _ts(now + value)
        if isinstance(value, str):
            if value == "now":
                return _ts(now)
            return _ts(now + timedelta(**cls._parse_date_string(value)))
        return super()._parse_date_time(value, tzinfo)

    @classmethod
    def _parse_date(cls, value: Any) -> date:
        today = cls._now().date()
        if isinstance(value, datetime):
            return value.date()
        if isinstance(value, date):
            return value
        if isinstance(value, timedelta):
            return today + value
        if isinstance(value, str):
            if value in ("today", "now"):
                return today
            return today + timedelta(**cls._parse_date_string(value))
        if isinstance(value, int):
            return today + timedelta(value)
        return super()._parse_date(value)

    def date_time_between_dates(
        self, datetime_start: Any = None, datetime_end: Any = None, tzinfo: Any = None
    ) -> datetime:
        now = self._now(tzinfo)
        return super().date_time_between_dates(
            now if datetime_start is None else datetime_start,
            now if datetime_end is None else datetime_end,
            tzinfo,
        )

    def _within(self, years: int, before: bool, after: bool, tzinfo: Any, dates: bool) -> Any:
        moment = self._now(tzinfo)
        now: date | datetime = moment.date() if dates else moment
        start, end = _period(now, years)
        between = self.date_between_dates if dates else self.date_time_between_dates
        extra = () if dates else (tzinfo,)
        if before and after:
            return between(start, end, *extra)
        if after:
            return between(now, end, *extra)
        return between(start, now, *extra) if before else now

    def date_time_this_century(
        self, before_now: bool = True, after_now: bool = False, tzinfo: Any = None
    ) -> datetime:
        return self._within(100, before_now, after_now, tzinfo, dates=False)

    def date_time_this_decade(
        self, before_now: bool = True, after_now: bool = False, tzinfo: Any = None
    ) -> datetime:
        return self._within(10, before_now, after_now, tzinfo, dates=False)

    def date_time_this_year(
        self, before_now: bool = True, after_now: bool = False, tzinfo: Any = None
    ) -> datetime:
        return self._within(1, before_now, after_now, tzinfo, dates=False)

    def date_time_this_month(
        self, before_now: bool = True, after_now: bool = False, tzinfo: Any = None
    ) -> datetime:
        return self._within(0, before_now, after_now, tzinfo, dates=False)

    def date_this_century(self, before_today: bool = True, after_today: bool = False) -> date:
        return self._within(100, before_today, after_today, None, dates=True)

    def date_this_decade(self, before_today: bool = True, after_today: bool = False) -> date:
        return self._within(10, before_today, after_today, None, dates=True)

    def date_this_year(self, before_today: bool = True, after_today: bool = False) -> date:
        return self._within(1, before_today, after_today, None, dates=True)

    def date_this_month(self, before_today: bool = True, after_today: bool = False) -> date:
        return self._within(0, before_today, after_today, None, dates=True)

    def date_of_birth(
        self, tzinfo: Any = None, minimum_age: int = 0, maximum_age: int = 115
    ) -> date:
        from faker.providers.date_time import change_year

        if not isinstance(minimum_age, int) or not isinstance(maximum_age, int):
            raise TypeError("minimum_age and maximum_age must be integers.")
        if not 0 <= minimum_age <= maximum_age:
            raise ValueError("expected 0 <= minimum_age <= maximum_age.")
        # Faker's own reckoning, from NOW: the full range of birthdays for those ages.
        today = self._now(tzinfo).date()
        start, end = change_year(today, -(maximum_age + 1)), change_year(today, -minimum_age)
        born = self.date_time_ad(tzinfo=tzinfo, start_datetime=start, end_datetime=end).date()
        return born if born != start else born + timedelta(days=1)


def fixed_now_faker(locale: str) -> Any:
    """A Faker for ``locale`` whose date and time provider's "now" is NOW."""
    from faker import Faker
    from faker.providers.date_time import Provider as DateTime

    faker = Faker(locale)
    (provider,) = [p for p in faker.get_providers() if isinstance(p, DateTime)]
    faker.add_provider(type("FixedNowDateTime", (_FixedNow, type(provider)), {}))
    return faker
