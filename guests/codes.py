"""Personal guest codes and the normalisation rules of the code + last name login."""

import hashlib
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


# Latin letters that Unicode does not decompose into a base letter and a mark.
_UNDECOMPOSABLE = str.maketrans({"ø": "o", "æ": "ae", "œ": "oe", "ł": "l", "đ": "d", "ð": "d", "þ": "th", "ı": "i"})


def normalize_name(raw: str) -> str:
    """Case-, accent- and surrounding-space-insensitive form of a name."""
    decomposed = unicodedata.normalize("NFKD", (raw or "").strip())
    without_marks = "".join(ch for ch in decomposed if not unicodedata.combining(ch))
    return " ".join(without_marks.casefold().translate(_UNDECOMPOSABLE).split())


def name_key(raw: str) -> str:
    """Letters and digits only, in the form of normalize_name: what search and login compare.

    Punctuation and spaces go too, so "O'Brien" and "obrien", "Pérez-García" and
    "perez garcia" meet: "obrien", "perezgarcia".
    """
    return "".join(ch for ch in normalize_name(raw) if ch.isalnum())


def search_key(*, first_name: str, last_name: str, code: str) -> str:
    """The stored search key of a guest: first name, last name, full name and code, each as name_key.

    Searched with `icontains` on every database (neither SQLite nor MongoDB has
    `unaccent`); a search term is name_key'd the same way, and parts are
    separated by spaces, which a term never contains, so a term never matches
    across two parts.
    """
    parts = [name_key(first_name), name_key(last_name), name_key(f"{first_name}{last_name}"), name_key(code)]
    return " ".join(part for part in parts if part)


#: The longest code Guest.code stores.
CODE_MAX_LENGTH = 16


def _long_code_digest(normalized: str) -> str:
    """A CODE_MAX_LENGTH-character stand-in for a longer code, in CODE_ALPHABET.

    Deterministic and unkeyed (a rotated SECRET_KEY must not lock guests out): it
    only shortens what the guest types; the login still needs the whole code and
    the last name.
    """
    number = int.from_bytes(hashlib.sha256(normalized.encode()).digest(), "big")
    chars = []
    for _position in range(CODE_MAX_LENGTH):
        number, index = divmod(number, len(CODE_ALPHABET))
        chars.append(CODE_ALPHABET[index])
    return "".join(chars)


def stored_code(raw: str) -> str:
    """The Guest.code that a typed (or imported) code stands for.

    Codes made here are CODE_LENGTH characters and are stored as typed
    (normalize_code). Codes of up to CODE_MAX_LENGTH characters brought from
    elsewhere (the party app's tokens, guests.party_import) are stored the same
    way. A longer one does not fit the column, so it is stored as its digest, and
    the login looks the digest up: the guest types the long code as before, and
    the digest shown to the organizer works too.
    """
    normalized = normalize_code(raw)
    if len(normalized) <= CODE_MAX_LENGTH:
        return normalized
    return _long_code_digest(normalized)
