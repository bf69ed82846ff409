"""The policy decision point: the one place that signs tokens.

Guests get a short access token after code + last name; organizers get a
simplejwt access/refresh pair whose claims list their organizations and roles.
Both are RS256 JWTs with a `kid` header; anything holding the public keys
(/.well-known/jwks.json) can check them, including an external gateway.
"""

import hashlib
import uuid
from datetime import timedelta

import jwt
from django.conf import settings
from django.utils import timezone
from rest_framework_simplejwt.backends import TokenBackend
from rest_framework_simplejwt.tokens import AccessToken, RefreshToken

from tenants.keys import keyring
from tenants.token_verification import InvalidToken
from tenants.token_verification import verify as verify_token

__all__ = ["InvalidToken", "sign", "guest_access_token", "organizer_token_pair", "organizer_token_refresh"]

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

    def decode(self, token: str, verify: bool = True) -> dict:  # noqa: FBT001, FBT002 - simplejwt's signature
        return verify_token(token)


_backend = _SignerBackend()


class OrganizerRefreshToken(RefreshToken):
    def get_token_backend(self):
        return _backend

    @property
    def access_token(self):
        access = OrganizerAccessToken()
        access.set_exp(from_time=self.current_time)
        for claim, value in self.payload.items():
            if claim not in {"token_type", "exp", "jti", "iat", "iss", "aud"}:
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


def organizer_token_pair(user) -> dict:
    refresh = OrganizerRefreshToken.for_user(user)
    for claim, value in organizer_claims(user).items():
        refresh[claim] = value
    return {"refresh": str(refresh), "access": str(refresh.access_token)}


def organizer_token_refresh(raw_refresh: str) -> dict:
    """A new access token with organizations re-read from the database.

    Membership changes therefore reach tokens within one access lifetime.
    """
    from django.contrib.auth import get_user_model

    refresh = OrganizerRefreshToken(raw_refresh)
    user = get_user_model().objects.filter(pk=refresh["sub"], is_active=True).first()
    if user is None:
        from rest_framework_simplejwt.exceptions import TokenError

        raise TokenError("User is inactive or gone")
    for claim, value in organizer_claims(user).items():
        refresh[claim] = value
    return {"access": str(refresh.access_token)}


def guest_token_lifetime() -> timedelta:
    return settings.JWT_GUEST_TOKEN_LIFETIME
