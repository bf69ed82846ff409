"""Tokens that must be refused, on a guest and an organizer endpoint, and the checks that need only public keys.

Every refusal is asserted three ways: the status, the body's `code`, and (for
writes) a database left exactly as it was.
"""

import ast
import base64
import datetime as dt
import functools
import hashlib
import hmac
import json
import subprocess
import sys
import uuid
from dataclasses import dataclass
from pathlib import Path

import jwt
import pytest
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import padding, rsa
from django.conf import settings
from django.utils import timezone
from rest_framework.exceptions import AuthenticationFailed
from rest_framework.test import APIRequestFactory

from events.models import Event
from eventsaas.models import AuditLog
from guests.models import Guest
from tenants import token_verification
from tenants.authentication import JWTAuthentication
from tenants.keys import _thumbprint, keyring
from tenants.models import Membership, Role, Tenant, User
from tenants.token_verification import InvalidToken, verify
from tenants.tokens import OrganizerAccessToken, guest_access_token, organizer_token_pair, sign
from tests.factories import EventFactory, GuestFactory, MembershipFactory, TenantFactory

RSVP_URL = "/api/v1/rsvp"
REFRESH_URL = "/api/v1/auth/token/refresh"
JWKS_URL = "/.well-known/jwks.json"
WWW_AUTHENTICATE = 'Bearer realm="api"'
REPO = Path(__file__).resolve().parents[2]


# --- crafting tokens by hand ------------------------------------------------------------------------


def _b64(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode()


def _segment(value) -> str:
    return _b64(json.dumps(value, separators=(",", ":")).encode())


def _unsegment(segment: str):
    return json.loads(base64.urlsafe_b64decode(segment + "=" * (-len(segment) % 4)))


def _now() -> int:
    return int(timezone.now().timestamp())


def _rs256(claims, *, key=None, kid="ours", headers=None) -> str:
    """Signed with our signing key (or `key`) exactly as given: no claim added, none checked (PyJWT would)."""
    ring = keyring()
    header = {"alg": "RS256", "typ": "JWT", **(headers or {})}
    if kid is not None:
        header["kid"] = ring.signing_kid if kid == "ours" else kid
    signing_input = f"{_segment(header)}.{_segment(claims)}".encode()
    signature = (key or ring.signing_key).sign(signing_input, padding.PKCS1v15(), hashes.SHA256())
    return f"{signing_input.decode()}.{_b64(signature)}"


def _hmac_token(claims: dict, secret: bytes, *, alg="HS256", kid="ours") -> str:
    """The algorithm-confusion forgery; PyJWT refuses to make it, so it is made by hand."""
    header = {"alg": alg, "typ": "JWT"}
    if kid is not None:
        header["kid"] = keyring().signing_kid if kid == "ours" else kid
    signing_input = f"{_segment(header)}.{_segment(claims)}"
    digest = {"HS256": hashlib.sha256, "HS384": hashlib.sha384, "HS512": hashlib.sha512}.get(alg, hashlib.sha256)
    return f"{signing_input}.{_b64(hmac.new(secret, signing_input.encode(), digest).digest())}"


def _unsigned(claims: dict, *, alg="none") -> str:
    return f"{_segment({'alg': alg, 'typ': 'JWT', 'kid': keyring().signing_kid})}.{_segment(claims)}."


def _tampered(token: str, **changes) -> str:
    """The same header and signature over a changed payload."""
    header, payload, signature = token.split(".")
    claims = {**_unsegment(payload), **changes}
    return f"{header}.{_segment(claims)}.{signature}"


@functools.cache
def _other_key() -> rsa.RSAPrivateKey:
    return rsa.generate_private_key(public_exponent=65537, key_size=2048)


def _public_pems(jwks: dict) -> dict:
    """What an attacker can derive from the published JWKS: the public key in the usual encodings."""
    public = jwt.PyJWK(jwks["keys"][0]).key
    return {
        "spki-pem": public.public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo),
        "pkcs1-pem": public.public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.PKCS1),
        "spki-der": public.public_bytes(serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo),
        "jwk-json": json.dumps(jwks["keys"][0]).encode(),
    }


# --- the two sides ----------------------------------------------------------------------------------


def _call(client, method, url, body=None, *, token=None, authorization=None):
    headers = {}
    if authorization is not None:
        headers["HTTP_AUTHORIZATION"] = authorization
    elif token is not None:
        headers["HTTP_AUTHORIZATION"] = f"Bearer {token}"
    if body is None:
        return getattr(client, method)(url, **headers)
    return getattr(client, method)(url, body, content_type="application/json", **headers)


def db_state() -> dict:
    """Every row a guest or organizer request could create or change."""
    return {
        "tenants": sorted(Tenant.objects.values_list("id", "name", "slug")),
        "memberships": sorted(Membership.objects.values_list("tenant_id", "user_id", "role")),
        "users": sorted(User.objects.values_list("id", "email", "is_active", "last_login")),
        "events": sorted(Event.objects.values(), key=lambda row: row["id"]),
        "guests": sorted(Guest.objects.values(), key=lambda row: row["id"]),
        "audit_log": AuditLog.objects.count(),
    }


@dataclass
class Side:
    name: str
    token: str
    read: tuple
    write: tuple
    write_status: int

    @property
    def claims(self) -> dict:
        return verify(self.token)


def _event_body():
    return {"name": "Forged party", "starts_at": "2031-01-01T18:00:00+00:00"}


@pytest.fixture
def anna(household):
    return household[0]


@pytest.fixture
def guest_side(anna):
    return Side(
        name="guest",
        token=guest_access_token(anna),
        read=("get", RSVP_URL, None),
        write=("put", RSVP_URL, {"attending": True, "num_guests": 2}),
        write_status=200,
    )


@pytest.fixture
def organizer_side(owner, tenant, event):
    return Side(
        name="organizer",
        token=organizer_token_pair(owner)["access"],
        read=("get", f"/api/v1/orgs/{tenant.slug}/events", None),
        write=("post", f"/api/v1/orgs/{tenant.slug}/events", _event_body()),
        write_status=201,
    )


@pytest.fixture(params=["guest", "organizer"])
def side(request, anna, owner, tenant, event) -> Side:
    return request.getfixturevalue(f"{request.param}_side")


def assert_refused(client, side: Side, token=None, *, authorization=None, status=401, code="authentication_failed"):
    """Neither the read nor the write gets through, and the database is untouched."""
    before = db_state()
    responses = []
    for method, url, body in (side.read, side.write):
        response = _call(client, method, url, body, token=token, authorization=authorization)
        responses.append(response)
        assert response.status_code == status, (method, url, response.status_code, response.content)
        assert response["Content-Type"] == "application/json"
        assert response.json()["code"] == code, response.json()
        if status == 401:
            assert response["WWW-Authenticate"] == WWW_AUTHENTICATE
    assert db_state() == before
    return responses[0].json()


# --- the controls: the untouched tokens work --------------------------------------------------------


def test_the_untouched_token_reads(client, side):
    response = _call(client, *side.read, token=side.token)

    assert response.status_code == 200, response.content


def test_the_untouched_token_writes(client, side):
    response = _call(client, *side.write, token=side.token)

    assert response.status_code == side.write_status, response.content


# --- forged, expired and misaddressed tokens: 401 ---------------------------------------------------


def test_an_expired_token_is_refused(client, side):
    expired = sign({**side.claims, "iat": _now() - 3600, "exp": _now() - 1})

    body = assert_refused(client, side, expired)

    assert body["detail"] == "Token expired"


def test_a_token_expired_by_its_lifetime_is_refused(client, side, settings, monkeypatch):
    """The real issuers, with lifetimes already over."""
    settings.JWT_GUEST_TOKEN_LIFETIME = dt.timedelta(seconds=-1)
    monkeypatch.setattr(OrganizerAccessToken, "lifetime", dt.timedelta(seconds=-1))
    if side.name == "guest":
        token = guest_access_token(Guest.objects.get(pk=side.claims["sub"]))
    else:
        token = organizer_token_pair(User.objects.get(pk=side.claims["sub"]))["access"]

    assert assert_refused(client, side, token)["detail"] == "Token expired"


TAMPERINGS = {
    "role": lambda side, other: {"role": "organizer" if side.name == "guest" else "guest"},
    "tenant_id": lambda side, other: {"tenant_id": str(other.tenant_id)},
    "event_id": lambda side, other: {"event_id": str(other.event_id)},
    "sub": lambda side, other: {"sub": str(other.pk)},
    "orgs": lambda side, other: {"orgs": {str(other.tenant_id): {"slug": other.tenant.slug, "role": "owner"}}},
    "exp": lambda side, other: {"exp": _now() + 10 * 365 * 24 * 3600},
    "everything": lambda side, other: {
        "role": "organizer",
        "sub": str(other.pk),
        "tenant_id": str(other.tenant_id),
        "orgs": {str(other.tenant_id): {"slug": other.tenant.slug, "role": "owner"}},
    },
}


@pytest.mark.parametrize("tampering", TAMPERINGS)
def test_a_tampered_payload_is_refused(client, side, tampering):
    other = GuestFactory(first_name="Victim")  # another organization's guest
    forged = _tampered(side.token, **TAMPERINGS[tampering](side, other))

    body = assert_refused(client, side, forged)

    assert body["detail"] == "Invalid token"


@pytest.mark.parametrize(
    "signature",
    ["", "AAAA", "signature-of-another-token"],
    ids=["stripped", "garbage", "borrowed"],
)
def test_a_missing_or_borrowed_signature_is_refused(client, side, signature):
    header, payload, _ = side.token.split(".")
    if signature == "signature-of-another-token":
        signature = sign({**side.claims, "jti": uuid.uuid4().hex}).split(".")[2]

    assert assert_refused(client, side, f"{header}.{payload}.{signature}")["detail"] == "Invalid token"


def test_a_token_signed_by_another_key_under_our_kid_is_refused(client, side):
    forged = _rs256(side.claims, key=_other_key(), kid="ours")

    assert assert_refused(client, side, forged)["detail"] == "Invalid token"


@pytest.mark.parametrize("kid", ["its-own", "missing", "empty"])
def test_a_token_signed_by_another_key_under_another_kid_is_refused(client, side, kid):
    kids = {"its-own": _thumbprint(_other_key().public_key()), "missing": None, "empty": ""}
    forged = _rs256(side.claims, key=_other_key(), kid=kids[kid])

    assert assert_refused(client, side, forged)["detail"] == "Unknown signing key"


@pytest.mark.parametrize("kid", ["ours", "its-own"])
@pytest.mark.parametrize("embedding", ["jwk", "jku", "x5u"])
def test_keys_named_or_embedded_in_the_header_are_ignored(client, side, kid, embedding):
    """A token cannot bring its own key (CVE-2018-0114 style) or point to one."""
    other_jwk = json.loads(jwt.algorithms.RSAAlgorithm.to_jwk(_other_key().public_key()))
    header = {
        "jwk": {"jwk": other_jwk},
        "jku": {"jku": "https://attacker.example/jwks.json"},
        "x5u": {"x5u": "https://attacker.example/cert.pem"},
    }[embedding]
    own_kid = _thumbprint(_other_key().public_key())
    forged = _rs256(side.claims, key=_other_key(), kid="ours" if kid == "ours" else own_kid, headers=header)

    body = assert_refused(client, side, forged)

    assert body["detail"] == ("Invalid token" if kid == "ours" else "Unknown signing key")


@pytest.mark.parametrize("alg", ["none", "None", "NONE", "nOnE", ""])
def test_alg_none_is_refused(client, side, alg):
    body = assert_refused(client, side, _unsigned(side.claims, alg=alg))

    assert body["detail"] == "Unsupported token algorithm"


def test_a_token_without_alg_is_refused(client, side):
    forged = f"{_segment({'typ': 'JWT', 'kid': keyring().signing_kid})}.{_segment(side.claims)}."

    assert assert_refused(client, side, forged)["detail"] == "Unsupported token algorithm"


@pytest.mark.parametrize("alg", ["HS256", "HS384", "HS512"])
@pytest.mark.parametrize("secret", ["spki-pem", "pkcs1-pem", "spki-der", "jwk-json"])
def test_hmac_signed_with_the_public_key_is_refused(client, side, alg, secret):
    """The classic algorithm confusion: HMAC keyed with the published RSA public key."""
    public = _public_pems(client.get(JWKS_URL).json())[secret]
    forged = _hmac_token(side.claims, public, alg=alg)

    body = assert_refused(client, side, forged)

    assert body["detail"] == "Unsupported token algorithm"


def test_hmac_signed_with_the_public_key_under_an_rs256_header_is_refused(client, side):
    public = _public_pems(client.get(JWKS_URL).json())["spki-pem"]
    header, payload, _ = _hmac_token(side.claims, public).split(".")
    rs_header = _segment({"alg": "RS256", "typ": "JWT", "kid": keyring().signing_kid})
    forged_signature = _b64(hmac.new(public, f"{rs_header}.{payload}".encode(), hashlib.sha256).digest())

    body = assert_refused(client, side, f"{rs_header}.{payload}.{forged_signature}")

    assert body["detail"] == "Invalid token"


@pytest.mark.parametrize("alg", ["RS384", "RS512", "PS256", "ES256"])
def test_other_asymmetric_algorithms_are_refused_even_with_our_key(client, side, alg):
    if alg == "ES256":
        from cryptography.hazmat.primitives.asymmetric import ec

        key = ec.generate_private_key(ec.SECP256R1())
    else:
        key = keyring().signing_key
    forged = jwt.encode(side.claims, key, algorithm=alg, headers={"kid": keyring().signing_kid})

    assert assert_refused(client, side, forged)["detail"] == "Unsupported token algorithm"


@pytest.mark.parametrize("issuer", ["evil", "EVENTSAAS", "eventsaas-staging", "", ["eventsaas"]])
def test_a_wrong_issuer_is_refused(client, side, issuer):
    forged = _rs256({**side.claims, "iss": issuer})

    assert assert_refused(client, side, forged)["detail"] == "Invalid token"


@pytest.mark.parametrize("audience", ["other-api", ["other-api"], "EVENTSAAS-API", "", []])
def test_a_wrong_audience_is_refused(client, side, audience):
    forged = _rs256({**side.claims, "aud": audience})

    assert assert_refused(client, side, forged)["detail"] == "Invalid token"


@pytest.mark.parametrize("how", ["missing", "null"])
@pytest.mark.parametrize("claim", ["exp", "iat", "iss", "aud", "sub", "role"])
def test_a_token_without_a_required_claim_is_refused(client, side, claim, how):
    claims = {**side.claims}
    if how == "missing":
        del claims[claim]
    else:
        claims[claim] = None

    assert assert_refused(client, side, _rs256(claims))["detail"] == "Invalid token"


@pytest.mark.parametrize("value", ["missing", None, "refresh", "ACCESS", "id"])
def test_a_token_without_the_access_type_is_refused(client, side, value):
    claims = {**side.claims}
    if value == "missing":
        del claims["token_type"]
    else:
        claims["token_type"] = value

    assert assert_refused(client, side, sign(claims))["detail"] == "An access token is required."


@pytest.mark.parametrize("role", ["admin", "owner", "Guest", "", None])
def test_a_token_with_an_unknown_role_is_refused(client, side, role):
    assert assert_refused(client, side, sign({**side.claims, "role": role}))["code"] == "authentication_failed"


@pytest.mark.parametrize("claim", ["tenant_id", "event_id", "code_fp"])
def test_a_guest_token_without_its_scope_is_refused(client, guest_side, claim):
    claims = {**guest_side.claims}
    del claims[claim]

    body = assert_refused(client, guest_side, sign(claims))

    assert body["detail"] == "This token is no longer valid; log in again."


def test_a_guest_token_moved_to_another_event_of_the_same_organization_is_refused(client, guest_side, tenant):
    """Signed by us but naming an event the guest is not invited to: the guest lookup is scoped by both."""
    other_event = EventFactory(tenant=tenant)

    body = assert_refused(client, guest_side, sign({**guest_side.claims, "event_id": str(other_event.pk)}))

    assert body["detail"] == "This token is no longer valid; log in again."


# --- token types and roles --------------------------------------------------------------------------


def test_a_refresh_token_is_not_an_access_token(client, side, owner):
    if side.name == "guest":
        refresh = sign({**side.claims, "token_type": "refresh"})
    else:
        refresh = organizer_token_pair(owner)["refresh"]

    body = assert_refused(client, side, refresh)

    assert body["detail"] == "An access token is required."


def test_the_refresh_endpoint_refuses_an_access_token(client, side):
    before = db_state()

    response = client.post(REFRESH_URL, {"refresh": side.token}, content_type="application/json")

    assert response.status_code == 401, response.content
    assert response.json()["code"] == "token_not_valid"
    assert response["WWW-Authenticate"] == WWW_AUTHENTICATE
    assert "access" not in response.json()
    assert db_state() == before


def test_the_refresh_endpoint_gives_a_working_access_token_for_a_refresh_token(client, owner, organizer_side):
    refresh = organizer_token_pair(owner)["refresh"]

    response = client.post(REFRESH_URL, {"refresh": refresh}, content_type="application/json")

    assert response.status_code == 200, response.content
    access = response.json()["access"]
    assert verify(access)["token_type"] == "access"
    assert _call(client, *organizer_side.read, token=access).status_code == 200


def _refresh_claims(owner) -> dict:
    return verify(organizer_token_pair(owner)["refresh"])


REFRESH_FORGERIES = {
    "expired": lambda claims, jwks: sign({**claims, "exp": _now() - 1}),
    "tampered": lambda claims, jwks: _tampered(
        sign(claims), orgs={str(uuid.uuid4()): {"slug": "victim", "role": "owner"}}
    ),
    "other-key-our-kid": lambda claims, jwks: _rs256(claims, key=_other_key()),
    "other-key-own-kid": lambda claims, jwks: _rs256(
        claims, key=_other_key(), kid=_thumbprint(_other_key().public_key())
    ),
    "alg-none": lambda claims, jwks: _unsigned(claims),
    "hs256-public-key": lambda claims, jwks: _hmac_token(claims, _public_pems(jwks)["spki-pem"]),
    "wrong-issuer": lambda claims, jwks: sign({**claims, "iss": "evil"}),
    "wrong-audience": lambda claims, jwks: sign({**claims, "aud": "other-api"}),
    "no-jti": lambda claims, jwks: _rs256({k: v for k, v in claims.items() if k != "jti"}),
    "no-exp": lambda claims, jwks: _rs256({k: v for k, v in claims.items() if k != "exp"}),
    "no-sub": lambda claims, jwks: _rs256({k: v for k, v in claims.items() if k != "sub"}),
    "unknown-user": lambda claims, jwks: sign({**claims, "sub": str(uuid.uuid4())}),
    "garbage": lambda claims, jwks: "not.a.token",
    "empty-segments": lambda claims, jwks: "..",
}


@pytest.mark.parametrize("forgery", REFRESH_FORGERIES)
def test_the_refresh_endpoint_refuses_forged_refresh_tokens(client, owner, forgery):
    forged = REFRESH_FORGERIES[forgery](_refresh_claims(owner), client.get(JWKS_URL).json())
    before = db_state()

    response = client.post(REFRESH_URL, {"refresh": forged}, content_type="application/json")

    assert response.status_code == 401, response.content
    assert response.json()["code"] == "token_not_valid"
    assert "access" not in response.json()
    assert db_state() == before


def test_the_refresh_endpoint_refuses_a_deactivated_account(client, owner):
    refresh = organizer_token_pair(owner)["refresh"]
    User.objects.filter(pk=owner.pk).update(is_active=False)

    response = client.post(REFRESH_URL, {"refresh": refresh}, content_type="application/json")

    assert response.status_code == 401
    assert response.json()["code"] == "token_not_valid"


@pytest.mark.parametrize(
    "body",
    ['{"refresh": ["a"]}', '{"refresh": {"a": 1}}', "{}", '{"refresh": "x", "extra": 1}', "[]", "not json", "null"],
)
def test_the_refresh_endpoint_answers_malformed_bodies_with_a_400(client, body):
    response = client.post(REFRESH_URL, body, content_type="application/json")

    assert response.status_code == 400, response.content
    assert response.json()["code"] in {"invalid", "parse_error"}


def _organizer_urls(event, guest) -> list[tuple]:
    event_url = f"/api/v1/events/{event.pk}"
    guest_url = f"{event_url}/guests/{guest.pk}"
    return [
        ("get", f"/api/v1/orgs/{event.tenant.slug}/events", None),
        ("post", f"/api/v1/orgs/{event.tenant.slug}/events", _event_body()),
        ("get", event_url, None),
        ("patch", event_url, {"name": "Hijacked"}),
        ("post", f"{event_url}/archive", {}),
        ("get", f"{event_url}/stats", None),
        ("get", f"{event_url}/dietary", None),
        ("get", f"{event_url}/activity", None),
        ("get", f"{event_url}/guests", None),
        ("post", f"{event_url}/guests", {"first_name": "Eve", "last_name": "Intruder"}),
        ("post", f"{event_url}/guests/bulk", {"guests": [{"first_name": "Eve", "last_name": "Intruder"}]}),
        ("get", guest_url, None),
        ("patch", guest_url, {"last_name": "Hijacked"}),
        ("delete", guest_url, None),
        ("post", f"{guest_url}/regenerate-code", {}),
        ("post", f"{guest_url}/leave-group", {}),
        ("post", f"{event_url}/groups", {"guests": [str(guest.pk), str(uuid.uuid4())]}),
    ]


def test_a_guest_token_is_forbidden_on_every_organizer_endpoint(client, anna, event):
    token = guest_access_token(anna)  # a guest of this very organization and event
    before = db_state()

    for method, url, body in _organizer_urls(event, anna):
        response = _call(client, method, url, body, token=token)

        assert response.status_code == 403, (method, url, response.content)
        assert response.json() == {"code": "permission_denied", "detail": "This endpoint is for organizers."}
    assert db_state() == before


def test_an_organizer_token_is_forbidden_on_the_guest_endpoint(client, owner, household):
    token = organizer_token_pair(owner)["access"]
    before = db_state()

    for method, body in (("get", None), ("put", {"attending": True, "num_guests": 2})):
        response = _call(client, method, RSVP_URL, body, token=token)

        assert response.status_code == 403, response.content
        assert response.json() == {"code": "permission_denied", "detail": "This endpoint is for guests."}
    assert db_state() == before


def test_an_organizer_token_naming_a_guest_as_subject_is_still_forbidden_on_the_guest_endpoint(client, owner, anna):
    claims = verify(organizer_token_pair(owner)["access"])
    token = sign({**claims, "sub": str(anna.pk), "tenant_id": str(anna.tenant_id), "event_id": str(anna.event_id)})

    response = _call(client, "get", RSVP_URL, token=token)

    # Refused before the permission check now: no account has that id, so no token version matches.
    assert response.status_code == 401
    assert response.json()["code"] == "authentication_failed"


@pytest.fixture
def organization_b(db):
    """Another organization with an event, a household and its own owner."""
    tenant_b = TenantFactory()
    MembershipFactory(tenant=tenant_b, role=Role.OWNER)
    event_b = EventFactory(tenant=tenant_b)
    group_id = uuid.uuid4()
    guest_b = GuestFactory(event=event_b, first_name="Bea", group_id=group_id)
    GuestFactory(event=event_b, first_name="Ben", group_id=group_id)
    return event_b, guest_b


def test_an_organizer_of_a_cannot_reach_organization_bs_paths_and_objects(client, owner, event, organization_b):
    event_b, guest_b = organization_b
    token = organizer_token_pair(owner)["access"]
    before = db_state()

    for method, url, body in _organizer_urls(event_b, guest_b):
        response = _call(client, method, url, body, token=token)

        assert response.status_code == 404, (method, url, response.content)
        assert response.json()["code"] == "not_found"
    assert db_state() == before


def test_an_organizer_of_a_cannot_reach_bs_guest_through_as_event(client, owner, event, organization_b):
    _, guest_b = organization_b
    token = organizer_token_pair(owner)["access"]
    before = db_state()

    for method, url, body in _organizer_urls(event, guest_b)[11:]:  # the guest-addressed ones, under A's event
        response = _call(client, method, url, body, token=token)

        assert response.status_code in {400, 404}, (method, url, response.content)
        assert response.json()["code"] in {"not_found", "invalid"}
    assert db_state() == before


def test_organization_bs_own_owner_reaches_the_same_paths(client, organization_b):
    """The control for the two tests above: the 404s come from the organization, not the URLs."""
    event_b, guest_b = organization_b
    owner_b = Membership.objects.get(tenant=event_b.tenant).user
    token = organizer_token_pair(owner_b)["access"]

    for method, url, body in _organizer_urls(event_b, guest_b)[:12]:
        if method == "get":
            assert _call(client, method, url, body, token=token).status_code == 200, url


def test_a_token_listing_another_organization_does_not_open_it_unless_signed_by_us(client, owner, organization_b):
    """Only our signature makes `orgs` trustworthy; the tampered claim is the attack, the signed one the control."""
    event_b, _ = organization_b
    claims = verify(organizer_token_pair(owner)["access"])
    orgs = {**claims["orgs"], str(event_b.tenant_id): {"slug": event_b.tenant.slug, "role": "owner"}}
    url = f"/api/v1/events/{event_b.pk}"

    forged = _tampered(organizer_token_pair(owner)["access"], orgs=orgs)
    assert _call(client, "get", url, token=forged).status_code == 401
    assert _call(client, "get", url, token=sign({**claims, "orgs": orgs})).status_code == 200


# --- malformed Authorization headers: 401, never 500 ------------------------------------------------

RS256_OURS = {"alg": "RS256", "typ": "JWT"}


def _garbage_headers() -> dict:
    long_token = "A" * 20_000
    kid_header = _segment({**RS256_OURS, "kid": "x"})
    return {
        "empty": ("", "not_authenticated"),
        "basic": ("Basic dXNlcjpwYXNz", "not_authenticated"),
        "token-keyword": ("Token abc.def.ghi", "not_authenticated"),
        "keyword-only": ("Bearer", "authentication_failed"),
        "keyword-and-space": ("Bearer   ", "authentication_failed"),
        "two-tokens": ("Bearer abc def", "authentication_failed"),
        "one-word": ("Bearer abc", "authentication_failed"),
        "three-dots": ("Bearer a.b.c", "authentication_failed"),
        "empty-segments": ("Bearer ..", "authentication_failed"),
        "four-segments": ("Bearer a.b.c.d", "authentication_failed"),
        "huge": (f"Bearer {long_token}", "authentication_failed"),
        "empty-json": (f"Bearer {_segment({})}.{_segment({})}.", "authentication_failed"),
        "array-header": (f"Bearer {_segment([])}.{_segment({})}.x", "authentication_failed"),
        "string-header": (f"Bearer {_segment('RS256')}.{_segment({})}.x", "authentication_failed"),
        "list-kid": (f"Bearer {_segment({**RS256_OURS, 'kid': ['x']})}.{_segment({})}.x", "authentication_failed"),
        "object-kid": (f"Bearer {_segment({**RS256_OURS, 'kid': {'a': 1}})}.{_segment({})}.x", "authentication_failed"),
        "int-kid": (f"Bearer {_segment({**RS256_OURS, 'kid': 7})}.{_segment({})}.x", "authentication_failed"),
        "list-alg": (f"Bearer {_segment({'alg': ['RS256'], 'kid': 'x'})}.{_segment({})}.x", "authentication_failed"),
        "unknown-kid": (f"Bearer {kid_header}.{_segment({})}.x", "authentication_failed"),
        "not-base64": ("Bearer a$b.c%d.e&f", "authentication_failed"),
        "not-json": (f"Bearer {_b64(b'not json')}.{_b64(b'not json')}.x", "authentication_failed"),
        "latin-1": ("Bearer \xe9t\xe9.\xe9.\xe9", "authentication_failed"),
        "utf-8-as-received": ("Bearer " + "\U0001f600.é".encode().decode("latin-1"), "authentication_failed"),
        "control-characters": ("Bearer \x00\x01\x02", "authentication_failed"),
        "quoted": ('Bearer "abc.def.ghi"', "authentication_failed"),
    }


@pytest.mark.parametrize("case", _garbage_headers())
def test_a_malformed_authorization_header_is_a_401_never_a_500(client, side, case):
    authorization, code = _garbage_headers()[case]

    assert_refused(client, side, authorization=authorization, code=code)


def test_our_kid_with_a_malformed_payload_is_a_401(client, side):
    header = _segment({**RS256_OURS, "kid": keyring().signing_kid})
    for payload in (_b64(b"not json"), _segment([]), _segment("claims"), ""):
        assert_refused(client, side, f"{header}.{payload}.{side.token.split('.')[2]}")


def test_a_validly_signed_payload_that_is_not_an_object_is_a_401(client, side):
    """Signed with our key but not a claims object: still refused, never a crash."""
    for payload in ([1, 2], "text", None, 42):
        assert_refused(client, side, _rs256(payload))


@pytest.mark.parametrize(
    ("claim", "value"),
    [("exp", "tomorrow"), ("iat", "now"), ("sub", 42), ("sub", ["x"]), ("jti", 5), ("role", ["guest"]), ("role", {})],
)
def test_validly_signed_claims_of_the_wrong_type_are_a_401(client, side, claim, value):
    assert_refused(client, side, _rs256({**side.claims, claim: value}))


# --- an external gateway needs the JWKS document and nothing else ----------------------------------

GATEWAY = """
import json, sys
import jwt

data = json.load(sys.stdin)
jwks = jwt.PyJWKSet.from_dict(data["jwks"])
header = jwt.get_unverified_header(data["token"])
claims = jwt.decode(
    data["token"], key=jwks[header["kid"]], algorithms=["RS256"], audience=data["aud"], issuer=data["iss"]
)
try:
    jwt.decode(data["forged"], key=jwks[header["kid"]], algorithms=["RS256"], audience=data["aud"], issuer=data["iss"])
    forged = "accepted"
except jwt.InvalidSignatureError:
    forged = "refused"
try:
    import tenants  # noqa: F401
    app = "importable"
except ImportError:
    app = "absent"
print(json.dumps({"claims": claims, "forged": forged, "app": app, "django": "django" in sys.modules}))
"""


def _guest_login_token(client, guest) -> str:
    response = client.post(
        "/api/v1/auth/guest-login", {"code": guest.code, "last_name": guest.last_name}, content_type="application/json"
    )
    assert response.status_code == 200, response.content
    return response.json()["access"]


def test_the_jwks_document_publishes_only_public_rs256_keys(client):
    response = client.get(JWKS_URL)

    assert response.status_code == 200
    assert response["Content-Type"] == "application/json"
    assert "public" in response["Cache-Control"]
    keys = response.json()["keys"]
    assert [key["kid"] for key in keys] == [key.kid for key in keyring().published]
    for key in keys:
        assert set(key) == {"kty", "kid", "use", "alg", "n", "e"}, "no private member (d, p, q, dp, dq, qi)"
        assert (key["kty"], key["use"], key["alg"]) == ("RSA", "sig", "RS256")
    assert client.post(JWKS_URL).status_code == 405


def test_a_gateway_verifies_a_guest_token_with_only_the_jwks_document_and_pyjwt(client, anna):
    token = _guest_login_token(client, anna)
    jwks = client.get(JWKS_URL).json()

    key_set = jwt.PyJWKSet.from_dict(jwks)
    key = key_set[jwt.get_unverified_header(token)["kid"]]
    claims = jwt.decode(token, key=key, algorithms=["RS256"], audience="eventsaas-api", issuer="eventsaas")

    assert claims["sub"] == str(anna.pk)
    assert claims["role"] == "guest"
    assert claims["tenant_id"] == str(anna.tenant_id)
    assert claims["event_id"] == str(anna.event_id)
    with pytest.raises(jwt.InvalidSignatureError):
        jwt.decode(_tampered(token, role="organizer"), key=key, algorithms=["RS256"], audience="eventsaas-api")


def test_a_gateway_outside_the_application_needs_nothing_but_the_jwks_document(client, anna):
    """A separate Python process with PyJWT only: no Django, no settings, no application code, no database."""
    token = _guest_login_token(client, anna)
    data = {
        "jwks": client.get(JWKS_URL).json(),
        "token": token,
        "forged": _tampered(token, sub=str(uuid.uuid4())),
        "iss": settings.JWT_ISSUER,
        "aud": settings.JWT_AUDIENCE,
    }

    result = subprocess.run(
        [sys.executable, "-I", "-c", GATEWAY],
        input=json.dumps(data),
        capture_output=True,
        text=True,
        cwd="/",
        timeout=60,
        check=False,
    )

    assert result.returncode == 0, result.stderr
    output = json.loads(result.stdout)
    assert output["claims"]["sub"] == str(anna.pk)
    assert output["claims"]["role"] == "guest"
    assert output["forged"] == "refused"
    assert output["app"] == "absent"
    assert output["django"] is False


# --- verification and authentication never touch the database ---------------------------------------


@pytest.fixture
def cold_keys():
    """Key caches empty before and after: the first verification loads the keys too."""

    def clear():
        keyring.cache_clear()
        token_verification._public_keys.cache_clear()

    clear()
    yield
    clear()


def _authenticate(token=None, authorization=None):
    header = authorization if authorization is not None else f"Bearer {token}"
    request = APIRequestFactory().get(RSVP_URL, HTTP_AUTHORIZATION=header)
    return JWTAuthentication().authenticate(request)


def test_authentication_runs_no_query(django_assert_num_queries, anna, owner, cold_keys):
    guest_token = guest_access_token(anna)
    organizer_token = organizer_token_pair(owner)["access"]
    tenant_id = owner.memberships.get().tenant_id
    forgeries = [_tampered(guest_token, role="organizer"), _unsigned(verify(guest_token)), "garbage"]
    keyring.cache_clear()
    token_verification._public_keys.cache_clear()

    with django_assert_num_queries(0):
        identity, claims = _authenticate(guest_token)
        assert identity.is_guest and identity.pk == str(anna.pk)
        identity, claims = _authenticate(organizer_token)
        assert identity.is_organizer and identity.role_in(tenant_id) == Role.OWNER
        for forged in forgeries:
            with pytest.raises(AuthenticationFailed):
                _authenticate(forged)


def test_verification_needs_no_database_at_all(cold_keys):
    """No `db` fixture: pytest-django fails any query, so this passes only if none is made."""
    guest = Guest(
        id=uuid.uuid4(), tenant_id=uuid.uuid4(), event_id=uuid.uuid4(), first_name="A", last_name="B", code="ABCDEFGH"
    )
    token = guest_access_token(guest)

    claims = verify(token)
    identity, _ = _authenticate(token)

    assert claims["sub"] == str(guest.pk)
    assert identity.is_guest
    with pytest.raises(InvalidToken):
        verify(_tampered(token, sub=str(uuid.uuid4())))


# --- a verified token is remembered; its expiry is checked on every use ------------------------------


@pytest.fixture
def decodes(monkeypatch):
    """Counts full verifications (PyJWT's decode: signature, issuer, audience, claims)."""
    token_verification._verified.cache_clear()
    calls = []
    real = jwt.decode
    monkeypatch.setattr(jwt, "decode", lambda *args, **kwargs: calls.append(1) or real(*args, **kwargs))
    yield calls
    token_verification._verified.cache_clear()


def test_a_token_is_checked_in_full_once_per_key_set(anna, decodes):
    token = guest_access_token(anna)

    assert verify(token)["sub"] == verify(token)["sub"] == str(anna.pk)
    assert len(decodes) == 1
    token_verification._public_keys.cache_clear()  # keys reloaded (a rotation): checked in full again
    verify(token)
    assert len(decodes) == 2


def test_a_remembered_token_still_expires(anna, decodes, monkeypatch):
    token = guest_access_token(anna)
    claims = verify(token)
    seconds_left = claims["exp"] - _now()

    class Later(dt.datetime):
        @classmethod
        def now(cls, tz=None):
            return dt.datetime.now(tz) + dt.timedelta(seconds=seconds_left + 1)

    monkeypatch.setattr(token_verification, "datetime", Later)
    with pytest.raises(InvalidToken, match="Token expired"):
        verify(token)
    assert len(decodes) == 1  # refused from the remembered claims, by their expiry


def test_a_remembered_token_is_not_remembered_for_another_issuer_or_audience(anna, decodes, settings):
    token = guest_access_token(anna)
    verify(token)

    settings.JWT_AUDIENCE = "another-api"
    with pytest.raises(InvalidToken):
        verify(token)


def test_changing_the_returned_claims_changes_nothing_remembered(anna, decodes):
    token = guest_access_token(anna)
    verify(token)["sub"] = str(uuid.uuid4())

    assert verify(token)["sub"] == str(anna.pk)


def test_a_refused_token_is_not_remembered(anna, decodes):
    forged = _tampered(guest_access_token(anna), role="organizer")
    for _ in range(3):
        with pytest.raises(InvalidToken):
            verify(forged)
    assert len(decodes) == 3


@pytest.mark.parametrize("module", ["tenants/token_verification.py", "tenants/authentication.py"])
def test_the_enforcement_modules_import_nothing_that_reaches_the_database_or_private_keys(module):
    tree = ast.parse((REPO / module).read_text())
    imported = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            imported |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            imported |= {f"{node.module}.{alias.name}" for alias in node.names}
    forbidden = ("django.db", ".models", "models.", "selectors", "services", "signing_key", "load_pem_private")
    assert not [name for name in imported if any(word in name for word in forbidden)], imported
    source = (REPO / module).read_text()
    assert "signing_key" not in source
    assert "load_pem_private_key" not in source
