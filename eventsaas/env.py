"""Small helpers that read settings from the environment.

Kept apart from settings.py so the parsing rules are explicit and testable.
"""

import os

from django.core.exceptions import ImproperlyConfigured

_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off", ""}


def env_str(name: str, default: str = "") -> str:
    return os.environ.get(name, default)


def env_bool(name: str, default: bool = False) -> bool:
    raw = os.environ.get(name)
    if raw is None:
        return default
    value = raw.strip().lower()
    if value in _TRUE:
        return True
    if value in _FALSE:
        return False
    raise ImproperlyConfigured(f"{name} must be a boolean (1/0, true/false), got {raw!r}")


def env_int(name: str, default: int) -> int:
    raw = os.environ.get(name)
    if raw is None or raw.strip() == "":
        return default
    try:
        return int(raw)
    except ValueError as exc:
        raise ImproperlyConfigured(f"{name} must be an integer, got {raw!r}") from exc


def env_list(name: str, default: list[str] | None = None) -> list[str]:
    raw = os.environ.get(name)
    if raw is None:
        return list(default or [])
    return [item.strip() for item in raw.split(",") if item.strip()]


def env_seconds_map(name: str) -> dict[str, int]:
    """`name=seconds` pairs separated by commas, e.g. "billing.orders_expire_due=5,guests.reminders_send=30"."""
    raw = os.environ.get(name, "")
    result = {}
    for item in filter(None, (part.strip() for part in raw.split(","))):
        key, sep, value = item.partition("=")
        try:
            seconds = int(value)
        except ValueError:
            seconds = 0
        if not sep or not key.strip() or seconds < 1:
            raise ImproperlyConfigured(f"{name} must be name=seconds pairs (whole seconds, 1 or more), got {item!r}")
        result[key.strip()] = seconds
    return result


def percent_to_basis_points(raw: str) -> int:
    """ "2.5" -> 250: a percentage with at most two decimals, 0 to 100, read exactly (no float).

    Raises ValueError for anything else ("", "2.555", "1e2", "-1", "101", "2,5").
    """
    text = raw.strip()
    whole, dot, fraction = text.partition(".")
    if not whole.isascii() or not whole.isdigit() or (dot and not (fraction.isascii() and fraction.isdigit())):
        raise ValueError(f"not a percentage with at most two decimals: {raw!r}")
    if len(fraction) > 2:
        raise ValueError(f"at most two decimals (a basis point): {raw!r}")
    basis_points = int(whole) * 100 + int((fraction or "0").ljust(2, "0"))
    if basis_points > 10_000:
        raise ValueError(f"at most 100 percent: {raw!r}")
    return basis_points


def env_percent_basis_points(name: str, default: str) -> int:
    """A percentage setting ("2.5") as basis points (250); anything else stops the start."""
    raw = os.environ.get(name, default)
    try:
        return percent_to_basis_points(raw)
    except ValueError as exc:
        raise ImproperlyConfigured(
            f"{name} must be a percentage from 0 to 100 with at most two decimals: {exc}"
        ) from exc
