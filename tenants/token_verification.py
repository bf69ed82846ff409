"""Token checks that need only public keys (an enforcement point).

Nothing here reads a private key or the database: the keys come from the JWKS
document, so the same checks run in an external gateway given
/.well-known/jwks.json. Only RS256 is accepted, whatever the token's header says.
"""

import functools
from datetime import UTC, datetime

import jwt
from django.conf import settings
from django.utils.translation import gettext as _


class InvalidToken(Exception):
    """Any reason a token is not accepted; the message is safe to show."""


# A client sends the same token with every request, and the RS256 signature check is most of the cost of a
# verification (issue #15). So a token that passed is remembered, per key set: what cannot change for that string
# (signature, algorithm, key, issuer, audience, required claims) is not checked again, while its expiry is, on
# every use. Tokens that fail are never remembered; a new key set (rotation, cache_clear) starts empty.
VERIFIED_TOKENS_KEPT = 4096


class _PublicKeys:
    """The JWKS keys by key id; hashable by identity, so each key set has its own verified tokens."""

    def __init__(self, keys: dict):
        self.by_kid = keys


@functools.cache
def _public_keys() -> _PublicKeys:
    from tenants.keys import keyring  # the JWKS document is the interface: only public parts are used

    return _PublicKeys({jwk["kid"]: jwt.PyJWK(jwk, algorithm="RS256") for jwk in keyring().jwks()["keys"]})


def verify(token: str) -> dict:
    """The token's claims if its signature, expiry, issuer and audience check out."""
    claims = _verified(token, _public_keys(), settings.JWT_ISSUER, settings.JWT_AUDIENCE)
    if claims["exp"] <= datetime.now(tz=UTC).timestamp():  # PyJWT's own test, on a remembered token
        raise InvalidToken(_("Token expired"))
    return dict(claims)  # a copy: the remembered claims are never changed by a caller


@functools.lru_cache(maxsize=VERIFIED_TOKENS_KEPT)
def _verified(token: str, keys: _PublicKeys, issuer: str, audience: str) -> dict:
    try:
        header = jwt.get_unverified_header(token)
    except jwt.PyJWTError as exc:
        raise InvalidToken(_("Malformed token")) from exc
    if header.get("alg") != "RS256":
        raise InvalidToken(_("Unsupported token algorithm"))
    key = keys.by_kid.get(header.get("kid"))
    if key is None:
        raise InvalidToken(_("Unknown signing key"))
    try:
        claims = jwt.decode(
            token,
            key=key,
            algorithms=["RS256"],
            audience=audience,
            issuer=issuer,
            options={"require": ["exp", "iat", "iss", "aud", "sub", "role"]},
        )
    except jwt.ExpiredSignatureError as exc:
        raise InvalidToken(_("Token expired")) from exc
    except jwt.PyJWTError as exc:
        raise InvalidToken(_("Invalid token")) from exc
    claims["exp"] = int(claims["exp"])  # PyJWT accepted it as an integer; kept as one for the check on each use
    return claims
