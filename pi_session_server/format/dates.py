"""Times the JavaScript way (docs/FORMAT.md §2.5, D9): ``new Date(x).getTime()`` and ``toISOString()``.

``ms(x)`` accepts the ECMAScript date-time string format (``YYYY``/``±YYYYYY``, optional ``-MM``,
``-DD``, ``THH:mm``, ``:ss``, ``.fraction``, ``Z``/``±HH:mm``) plus the V8 extensions that occur in
practice: a space instead of ``T``, lowercase ``t``/``z`` and ``±HHMM`` offsets. Like V8, a day of
month up to 31 rolls over (``2025-02-30`` is March 2nd). Date-only forms are UTC; date-times without
an offset are local time (the process's time zone; the reference oracle runs in UTC).
"""

from __future__ import annotations

import math
import re
import time
from typing import Any

__all__ = ["MAX_TIME_MS", "file_timestamp", "iso_from_ms", "ms", "now_iso", "now_ms"]

#: ECMAScript's time value range: |t| <= 8.64e15 ms (100,000,000 days around the epoch).
MAX_TIME_MS = 8_640_000_000_000_000

_MS_PER_DAY = 86_400_000

_DATE_TIME_RE = re.compile(
    r"(?P<year>\d{4}|[+-]\d{6})"
    r"(?:-(?P<month>\d{2})(?:-(?P<day>\d{2}))?)?"
    r"(?:[Tt ](?P<hour>\d{2}):(?P<minute>\d{2})"
    r"(?::(?P<second>\d{2})(?:\.(?P<fraction>\d+))?)?"
    r"(?P<zone>[Zz]|[+-]\d{2}:?\d{2})?)?",
    re.ASCII,
)


def _days_from_civil(y: int, m: int, d: int) -> int:
    """Days since 1970-01-01 of a proleptic Gregorian date (any year; ``d`` may overflow the
    month, which rolls over like JS MakeDay)."""
    y -= m <= 2
    era = y // 400
    yoe = y - era * 400
    mp = (m + 9) % 12
    doy = (153 * mp + 2) // 5
    doe = yoe * 365 + yoe // 4 - yoe // 100 + doy
    return era * 146097 + doe - 719468 + (d - 1)


def _civil_from_days(z: int) -> tuple[int, int, int]:
    z += 719468
    era = z // 146097
    doe = z - era * 146097
    yoe = (doe - doe // 1460 + doe // 36524 - doe // 146096) // 365
    y = yoe + era * 400
    doy = doe - (365 * yoe + yoe // 4 - yoe // 100)
    mp = (5 * doy + 2) // 153
    d = doy - (153 * mp + 2) // 5 + 1
    m = mp + 3 if mp < 10 else mp - 9
    return y + (m <= 2), m, d


def _local_offset_ms(utc_ms: int) -> int:
    """The local time zone's UTC offset at a UTC instant."""
    seconds = utc_ms // 1000
    try:
        return time.localtime(seconds).tm_gmtoff * 1000
    except (OverflowError, OSError, ValueError):
        clamped = min(max(seconds, -(2**31)), 2**31 - 1)
        return time.localtime(clamped).tm_gmtoff * 1000


def _local_to_utc(local_ms: int) -> int:
    """ECMAScript UTC(t) for a local wall-clock time: an ambiguous time (DST fall-back) takes the
    earlier instant, a skipped time (spring-forward) the offset from before the transition."""
    before = _local_offset_ms(local_ms - _MS_PER_DAY)
    after = _local_offset_ms(local_ms + _MS_PER_DAY)
    if before == after:
        return local_ms - before
    valid = [local_ms - o for o in (before, after) if _local_offset_ms(local_ms - o) == o]
    return min(valid) if valid else local_ms - before


def _parse_date_string(s: str) -> int | float:
    m = _DATE_TIME_RE.fullmatch(s)
    if m is None:
        return math.nan
    year_text = m["year"]
    if year_text == "-000000":
        return math.nan
    year = int(year_text)
    month = int(m["month"]) if m["month"] else 1
    day = int(m["day"]) if m["day"] else 1
    if not (1 <= month <= 12 and 1 <= day <= 31):
        return math.nan
    midnight = _days_from_civil(year, month, day) * _MS_PER_DAY
    t = _with_time_of_day(m, midnight) if m["hour"] is not None else midnight
    if t is None or abs(t) > MAX_TIME_MS:
        return math.nan
    return t


def _with_time_of_day(m: re.Match[str], t: int) -> int | None:
    """``t`` (the date's midnight) plus the time of day ``m`` gives, in UTC; None when invalid."""
    hour, minute = int(m["hour"]), int(m["minute"])
    second = int(m["second"]) if m["second"] else 0
    fraction = m["fraction"] or ""
    millis = int((fraction + "00")[:3]) if fraction else 0
    if minute > 59 or second > 59:
        return None
    if hour > 24 or (hour == 24 and (minute or second or fraction.strip("0"))):
        return None
    t += ((hour * 60 + minute) * 60 + second) * 1000 + millis
    zone = m["zone"]
    if zone is None:
        if abs(t) > MAX_TIME_MS + 2 * _MS_PER_DAY:  # far outside the range whatever the zone
            return None
        return _local_to_utc(t)
    if zone not in ("Z", "z"):
        digits = zone[1:].replace(":", "")
        off_h, off_m = int(digits[:2]), int(digits[2:])
        if off_h > 23 or off_m > 59:
            return None
        off = (off_h * 60 + off_m) * 60_000
        t = t - off if zone[0] == "+" else t + off
    return t


def ms(x: Any) -> int | float:
    """``new Date(x).getTime()``: an int for a valid time, ``math.nan`` otherwise."""
    t = type(x)
    if t is str:
        return _parse_date_string(x)
    if x is None or x is False:
        return 0
    if x is True:
        return 1
    if t is int or t is float:
        if t is float and not math.isfinite(x):
            return math.nan
        if abs(x) > MAX_TIME_MS:
            return math.nan
        return int(x)  # truncates toward zero; -0 becomes 0
    return math.nan


def now_ms() -> int:
    """``Date.now()``."""
    return time.time_ns() // 1_000_000


def iso_from_ms(value: int | float) -> str | None:
    """``new Date(value).toISOString()``, or None where JS would throw (NaN, out of range)."""
    if isinstance(value, float):
        if not math.isfinite(value):
            return None
        value = int(value)
    if abs(value) > MAX_TIME_MS:
        return None
    days, rem = divmod(value, _MS_PER_DAY)
    y, mo, d = _civil_from_days(days)
    secs, millis = divmod(rem, 1000)
    hh, secs = divmod(secs, 3600)
    mi, ss = divmod(secs, 60)
    if 0 <= y <= 9999:
        year = f"{y:04d}"
    else:
        year = f"{'+' if y > 0 else '-'}{abs(y):06d}"
    return f"{year}-{mo:02d}-{d:02d}T{hh:02d}:{mi:02d}:{ss:02d}.{millis:03d}Z"


_last_iso: tuple[int, str] = (-1, "")


def now_iso() -> str:
    """``new Date().toISOString()``: UTC, milliseconds truncated (cached within one millisecond)."""
    global _last_iso
    now = now_ms()
    last_ms, last_text = _last_iso
    if now == last_ms:
        return last_text
    iso = iso_from_ms(now)
    assert iso is not None
    _last_iso = (now, iso)
    return iso


def file_timestamp(iso: str) -> str:
    """The file-name form of a timestamp: every ':' and '.' replaced by '-'."""
    return iso.replace(":", "-").replace(".", "-")
