"""DRF authentication from a bearer JWT.

The signature and claims are checked with public keys only; an organizer's
token is then checked against the cached token state (its version and its
refresh family, tenants.token_state), which costs two cache reads.
"""

from django.utils.translation import gettext as _
from rest_framework import authentication, exceptions

from tenants.token_state import organizer_access_is_current
from tenants.token_verification import InvalidToken, verify


class TokenIdentity:
    """Who the token says the caller is; built from claims alone."""

    is_authenticated = True
    is_anonymous = False

    def __init__(self, claims: dict):
        self.claims = claims
        self.pk = claims["sub"]
        self.role = claims["role"]

    @property
    def is_guest(self) -> bool:
        return self.role == "guest"

    @property
    def is_organizer(self) -> bool:
        return self.role == "organizer"

    def role_in(self, tenant_id) -> str | None:
        """The organizer's role in that organization according to the token, or None."""
        org = (self.claims.get("orgs") or {}).get(str(tenant_id))
        return org.get("role") if isinstance(org, dict) else None

    @property
    def tenant_ids(self) -> list[str]:
        return list((self.claims.get("orgs") or {}).keys())

    def __str__(self):
        return f"{self.role}:{self.pk}"


class JWTAuthentication(authentication.BaseAuthentication):
    keyword = "Bearer"

    def authenticate(self, request):
        header = authentication.get_authorization_header(request).split()
        if not header or header[0].lower() != self.keyword.lower().encode():
            return None
        if len(header) != 2:
            raise exceptions.AuthenticationFailed(_("Authorization header must be 'Bearer <token>'."))
        try:
            claims = verify(header[1].decode("ascii", errors="replace"))
        except InvalidToken as exc:
            raise exceptions.AuthenticationFailed(str(exc)) from exc
        if claims.get("token_type") != "access":
            raise exceptions.AuthenticationFailed(_("An access token is required."))
        if claims.get("role") not in ("guest", "organizer"):  # a tuple: a list or object role is refused, not a 500
            raise exceptions.AuthenticationFailed(_("Unknown role."))
        if claims["role"] == "organizer" and not organizer_access_is_current(claims):
            raise exceptions.AuthenticationFailed(_("This token was revoked: log in again."))
        return TokenIdentity(claims), claims

    def authenticate_header(self, request):
        return f'{self.keyword} realm="api"'
