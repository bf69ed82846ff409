"""Token checks that need only public keys (an enforcement point).

Nothing here reads a private key or the database: the keys come from the JWKS
document, so the same checks run in an external gateway given
/.well-known/jwks.json. Only RS256 is accepted, whatever the token's header says.
"""

import functools

import jwt
from django.conf import settings
from django.utils.translation import gettext as _


class InvalidToken(Exception):
    """Any reason a token is not accepted; the message is safe to show."""


@functools.cache
def _public_keys() -> dict:
    from tenants.keys import keyring  # the JWKS document is the interface: only public parts are used

    return {jwk["kid"]: jwt.PyJWK(jwk, algorithm="RS256") for jwk in keyring().jwks()["keys"]}


def verify(token: str) -> dict:
    """The token's claims if its signature, expiry, issuer and audience check out."""
    try:
        header = jwt.get_unverified_header(token)
    except jwt.PyJWTError as exc:
        raise InvalidToken(_("Malformed token")) from exc
    if header.get("alg") != "RS256":
        raise InvalidToken(_("Unsupported token algorithm"))
    key = _public_keys().get(header.get("kid"))
    if key is None:
        raise InvalidToken(_("Unknown signing key"))
    try:
        return jwt.decode(
            token,
            key=key,
            algorithms=["RS256"],
            audience=settings.JWT_AUDIENCE,
            issuer=settings.JWT_ISSUER,
            options={"require": ["exp", "iat", "iss", "aud", "sub", "role"]},
        )
    except jwt.ExpiredSignatureError as exc:
        raise InvalidToken(_("Token expired")) from exc
    except jwt.PyJWTError as exc:
        raise InvalidToken(_("Invalid token")) from exc
