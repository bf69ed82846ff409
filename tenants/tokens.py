"""The policy decision point: the one place that signs tokens.

Guests get a short access token after code + last name; organizers get a
simplejwt access/refresh pair whose claims list their organizations and roles.
Both are RS256 JWTs with a `kid` header; anything holding the public keys
(/.well-known/jwks.json) can check their signature and claims, including an
external gateway. Whether an organizer's access still stands (the token
version `ver`, the refresh family `fam`) is state the application checks
(tenants.token_state); refresh tokens rotate on every use.
"""

import hashlib
import uuid
from datetime import UTC, datetime, timedelta

import jwt
from django.conf import settings
from django.utils import timezone
from django.utils.translation import gettext as _
from rest_framework_simplejwt.backends import TokenBackend
from rest_framework_simplejwt.exceptions import TokenError
from rest_framework_simplejwt.tokens import AccessToken, RefreshToken

from eventsaas.services import audit_log_record
from tenants.keys import keyring
from tenants.token_verification import InvalidToken
from tenants.token_verification import verify as verify_token

__all__ = [
    "InvalidToken",
    "TokenError",
    "TokenReused",
    "sign",
    "guest_access_token",
    "organizer_token_pair",
    "organizer_token_refresh",
    "organizer_logout",
]

ROLE_GUEST = "guest"
ROLE_ORGANIZER = "organizer"


def sign(claims: dict) -> str:
    """Sign `claims` with the newest key; adds iss, aud, iat and jti when missing."""
    ring = keyring()
    payload = {
        "iss": settings.JWT_ISSUER,
        "aud": settings.JWT_AUDIENCE,
        "iat": int(timezone.now().timestamp()),
        "jti": uuid.uuid4().hex,
        **claims,
    }
    return jwt.encode(payload, ring.signing_key, algorithm="RS256", headers={"kid": ring.signing_kid})


def code_fingerprint(code: str) -> str:
    """A short digest of the guest's code: a regenerated code invalidates earlier tokens."""
    return hashlib.sha256(code.encode()).hexdigest()[:16]


def guest_access_token(guest) -> str:
    now = timezone.now()
    return sign(
        {
            "sub": str(guest.pk),
            "name": guest.full_name,
            "role": ROLE_GUEST,
            "tenant_id": str(guest.tenant_id),
            "event_id": str(guest.event_id),
            "code_fp": code_fingerprint(guest.code),
            # The household when issued: lets the API read guest and household in one query (a hint, checked).
            "group_id": str(guest.group_id) if guest.group_id else None,
            "token_type": "access",
            "exp": int((now + settings.JWT_GUEST_TOKEN_LIFETIME).timestamp()),
        }
    )


class _SignerBackend(TokenBackend):
    """simplejwt's backend, routed through this module's signer and the public-key verifier."""

    def __init__(self):
        super().__init__(algorithm="RS256", leeway=0)

    def encode(self, payload: dict) -> str:
        return sign(payload)

    # simplejwt annotates `token` as its Token class; what arrives is the encoded str.
    def decode(self, token: str, verify: bool = True) -> dict:  # type: ignore[override]  # noqa: FBT001, FBT002
        return verify_token(token)


_backend = _SignerBackend()

# Claims an access token copies from its refresh token; the rest it gets fresh.
_REFRESH_ONLY_CLAIMS = {"token_type", "exp", "jti", "iat", "iss", "aud", "gen"}


class OrganizerRefreshToken(RefreshToken):
    def get_token_backend(self):
        return _backend

    @property
    def access_token(self):
        access = OrganizerAccessToken()
        access.set_exp(from_time=self.current_time)
        for claim, value in self.payload.items():
            if claim not in _REFRESH_ONLY_CLAIMS:
                access[claim] = value
        return access


class OrganizerAccessToken(AccessToken):
    def get_token_backend(self):
        return _backend


def organizer_claims(user) -> dict:
    """The user's organizations and roles, read from the database at sign time."""
    from tenants.selectors import memberships_of

    return {
        "role": ROLE_ORGANIZER,
        "email": user.email,
        "orgs": {str(m.tenant_id): {"slug": m.tenant.slug, "role": m.role} for m in memberships_of(user=user)},
    }


def _pair(*, user, family, refresh: RefreshToken) -> dict:
    """Sign generation `family.generation` of the family's refresh token and an access token for it.

    The version is read after the claims, so a change of access made in between
    (which bumps the version after writing) leaves these tokens already stale.
    """
    from tenants.token_state import user_token_version

    for claim, value in organizer_claims(user).items():
        refresh[claim] = value
    refresh["fam"] = str(family.pk)
    refresh["gen"] = family.generation
    refresh.payload["exp"] = int(family.expires_at.timestamp())
    access = refresh.access_token
    access["ver"] = user_token_version(user_id=user.pk)
    return {"refresh": str(refresh), "access": str(access)}


def organizer_token_pair(user) -> dict:
    """A new API login: a refresh-token family of its own, generation 0, and an access token."""
    from tenants.token_state import token_family_create

    refresh = OrganizerRefreshToken.for_user(user)
    expires_at = datetime.fromtimestamp(refresh["exp"], tz=UTC)
    family = token_family_create(user=user, expires_at=expires_at)
    return _pair(user=user, family=family, refresh=refresh)


def organizer_token_refresh(raw_refresh: str) -> dict:
    """Rotate: a new access token and the family's next refresh token, organizations re-read.

    The presented refresh token is used up. Presenting it again revokes its
    whole family (TokenReused), including the access tokens it issued.
    """
    from django.contrib.auth import get_user_model

    from tenants.token_state import token_family_revoke, token_family_rotate

    presented = OrganizerRefreshToken(raw_refresh)  # type: ignore[arg-type]  # a str, though annotated Token
    family, reused = token_family_rotate(family_id=presented.get("fam"), generation=presented.get("gen"))
    if reused:
        _audit_reuse(presented)
        raise TokenReused(_("This refresh token was already used; every token of this login is revoked."))
    if family is None or str(family.user_id) != str(presented["sub"]):
        raise TokenError(_("This refresh token is no longer valid."))
    user = get_user_model().objects.filter(pk=family.user_id, is_active=True).first()
    if user is None:
        token_family_revoke(family_id=family.pk, reason="access_changed")
        raise TokenError(_("This account is no longer active."))
    # A fresh token object: the presented one's jti, iat and exp do not carry over.
    return _pair(user=user, family=family, refresh=OrganizerRefreshToken.for_user(user))


def organizer_logout(raw_refresh: str) -> None:
    """End one API login: its refresh family and every access token it issued. Logging out twice is harmless."""
    from tenants.token_state import token_family_revoke

    presented = OrganizerRefreshToken(raw_refresh)  # type: ignore[arg-type]  # a str, though annotated Token
    if not presented.get("fam"):
        raise TokenError(_("This refresh token belongs to no login."))
    token_family_revoke(family_id=presented["fam"], reason="logout")


def _audit_reuse(presented: OrganizerRefreshToken) -> None:
    audit_log_record(
        action="tokens.refresh_reused",
        object_id=presented.get("fam"),
        data={"user": str(presented.get("sub")), "generation": presented.get("gen")},
    )


class TokenReused(TokenError):
    """A refresh token came back after it was used: its family is revoked."""


def guest_token_lifetime() -> timedelta:
    return settings.JWT_GUEST_TOKEN_LIFETIME
