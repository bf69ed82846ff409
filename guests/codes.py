"""Personal guest codes and the normalisation rules of the code + last name login."""

import secrets
import unicodedata

# No look-alikes: without 0/O, 1/I/L. Upper case only; input is upper-cased.
CODE_ALPHABET = "23456789ABCDEFGHJKMNPQRSTUVWXYZ"
CODE_LENGTH = 8


def generate_code() -> str:
    return "".join(secrets.choice(CODE_ALPHABET) for _ in range(CODE_LENGTH))


def normalize_code(raw: str) -> str:
    """Accept what people type: any case, with spaces or dashes between characters."""
    cleaned = "".join(ch for ch in (raw or "").upper() if ch.isalnum())
    return cleaned


def normalize_name(raw: str) -> str:
    """Case-, accent- and surrounding-space-insensitive form of a name."""
    decomposed = unicodedata.normalize("NFKD", (raw or "").strip())
    without_marks = "".join(ch for ch in decomposed if not unicodedata.combining(ch))
    return " ".join(without_marks.casefold().split())
