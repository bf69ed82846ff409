"""The signing keys: the only module that reads private keys.

Keys are RSA (RS256). In production they come from PEM files named in
JWT_PRIVATE_KEY_FILES (comma-separated, newest first: the first signs, all are
published). Public keys of retired private keys can stay published through
JWT_RETIRED_PUBLIC_KEY_FILES until the last token they signed has expired.
On the embedded default, a key pair is generated on first use into
var/jwt/signing-key.pem (git-ignored, mode 0600).

Each key's `kid` is its RFC 7638 thumbprint, so it never needs configuring.
"""

import base64
import functools
import hashlib
import json
from dataclasses import dataclass
from pathlib import Path

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from django.conf import settings
from django.core.exceptions import ImproperlyConfigured

from eventsaas.local_secrets import write_once


def _b64(number: int) -> str:
    raw = number.to_bytes((number.bit_length() + 7) // 8, "big")
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode()


@dataclass(frozen=True)
class PublicKey:
    kid: str
    key: rsa.RSAPublicKey

    @property
    def jwk(self) -> dict:
        numbers = self.key.public_numbers()
        return {"kty": "RSA", "kid": self.kid, "use": "sig", "alg": "RS256", "n": _b64(numbers.n), "e": _b64(numbers.e)}


def _thumbprint(key: rsa.RSAPublicKey) -> str:
    numbers = key.public_numbers()
    canonical = json.dumps({"e": _b64(numbers.e), "kty": "RSA", "n": _b64(numbers.n)}, separators=(",", ":"))
    return base64.urlsafe_b64encode(hashlib.sha256(canonical.encode()).digest()).rstrip(b"=").decode()


def _public(key: rsa.RSAPublicKey) -> PublicKey:
    return PublicKey(kid=_thumbprint(key), key=key)


def _load_private(path: Path) -> rsa.RSAPrivateKey:
    try:
        key = serialization.load_pem_private_key(path.read_bytes(), password=None)
    except (OSError, ValueError) as exc:
        raise ImproperlyConfigured(f"Cannot read the JWT signing key {path}: {exc}") from exc
    if not isinstance(key, rsa.RSAPrivateKey) or key.key_size < 2048:
        raise ImproperlyConfigured(f"{path} must hold an RSA private key of at least 2048 bits")
    return key


def _generate_development_key(path: Path) -> None:
    """Create the embedded default's key once; concurrent first runs agree on one file."""
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    pem = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    write_once(path, pem)


@dataclass(frozen=True)
class KeyRing:
    signing_kid: str
    signing_key: rsa.RSAPrivateKey
    published: tuple[PublicKey, ...]

    def jwks(self) -> dict:
        return {"keys": [key.jwk for key in self.published]}


@functools.cache
def keyring() -> KeyRing:
    files = [Path(p) for p in settings.JWT_PRIVATE_KEY_FILES]
    if not files:
        if settings.IS_PRODUCTION:
            raise ImproperlyConfigured("Set JWT_PRIVATE_KEY_FILES in production")
        files = [Path(settings.JWT_DEVELOPMENT_KEY_FILE)]
        if not files[0].exists():
            _generate_development_key(files[0])
    private_keys = [_load_private(path) for path in files]
    published = [_public(key.public_key()) for key in private_keys]
    for path in settings.JWT_RETIRED_PUBLIC_KEY_FILES:
        key = serialization.load_pem_public_key(Path(path).read_bytes())
        if not isinstance(key, rsa.RSAPublicKey):
            raise ImproperlyConfigured(f"{path} must hold an RSA public key")
        published.append(_public(key))
    return KeyRing(signing_kid=published[0].kid, signing_key=private_keys[0], published=tuple(published))
