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
