"""Signing keys: rotation through settings, the JWKS document, and the development key's creation."""

import base64
import json
import multiprocessing
import stat
import threading
import uuid

import jwt
import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from django.core.exceptions import ImproperlyConfigured
from django.utils import timezone

from tenants import keys, token_verification
from tenants.keys import _generate_development_key, _thumbprint, keyring
from tenants.token_verification import InvalidToken, verify
from tenants.tokens import guest_access_token, organizer_token_pair, sign

JWKS_URL = "/.well-known/jwks.json"
RSVP_URL = "/api/v1/rsvp"
REFRESH_URL = "/api/v1/auth/token/refresh"


def _clear_key_caches():
    keyring.cache_clear()
    token_verification._public_keys.cache_clear()


@pytest.fixture(autouse=True)
def fresh_keys():
    """Every test here changes key settings: the cached key ring is dropped before and after."""
    _clear_key_caches()
    yield _clear_key_caches
    _clear_key_caches()


def _private_pem(key) -> bytes:
    return key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )


def _public_pem(key) -> bytes:
    return key.public_key().public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)


def _kid(key) -> str:
    return _thumbprint(key.public_key())


@pytest.fixture
def key_files(tmp_path):
    """Two RSA keys as an operator would hold them: private PEMs and the old key's public PEM."""
    directory = tmp_path / "keys"
    directory.mkdir()
    new, old = (rsa.generate_private_key(public_exponent=65537, key_size=2048) for _ in range(2))
    files = {
        "new": directory / "new.pem",
        "old": directory / "old.pem",
        "old_public": directory / "old.pub.pem",
    }
    files["new"].write_bytes(_private_pem(new))
    files["old"].write_bytes(_private_pem(old))
    files["old_public"].write_bytes(_public_pem(old))
    return {"new": new, "old": old, "paths": {name: str(path) for name, path in files.items()}}


@pytest.fixture
def use_keys(settings, fresh_keys):
    """Configure the key files, as a deployment's environment would, and drop the cached ring."""

    def configure(private=(), retired=()):
        settings.JWT_PRIVATE_KEY_FILES = list(private)
        settings.JWT_RETIRED_PUBLIC_KEY_FILES = list(retired)
        fresh_keys()

    return configure


def _claims(**extra) -> dict:
    now = int(timezone.now().timestamp())
    return {"sub": str(uuid.uuid4()), "role": "guest", "token_type": "access", "exp": now + 600, **extra}


def _kids(client) -> list[str]:
    response = client.get(JWKS_URL)
    assert response.status_code == 200
    return [key["kid"] for key in response.json()["keys"]]


def _bearer(token):
    return {"HTTP_AUTHORIZATION": f"Bearer {token}"}


# --- kid ---------------------------------------------------------------------------------------------

RFC7638_N = (
    "0vx7agoebGcQSuuPiLJXZptN9nndrQmbXEps2aiAFbWhM78LhWx4cbbfAAtVT86zwu1RK7aPFFxuhDR1L6tSoc_BJECPebWKRXjBZCiFV4n3oknj"
    "hMstn64tZ_2W-5JsGY4Hc5n9yBXArwl93lqt7_RN5w6Cf0h4QyQ5v-65YGjQR0_FDW2QvzqY368QQMicAtaSqzs8KJZgnYb9c7d0zgdAZHzu6qMQ"
    "vRL5hajrn1n91CbOpbISD08qNLyrdkt-bFTWhAI4vMQFh6WeZu0fM4lFd2NcRwr3XPksINHaQ-G_xBniIqbw0Ls1jF44-csFCur-kEgU8awapJzK"
    "nqDKgw"
)


def test_kid_is_the_rfc_7638_thumbprint():
    """The example of RFC 7638, section 3.1."""
    n = int.from_bytes(base64.urlsafe_b64decode(RFC7638_N + "=" * (-len(RFC7638_N) % 4)), "big")
    public = rsa.RSAPublicNumbers(e=65537, n=n).public_key()

    assert _thumbprint(public) == "NzbLsXh8uDCcd-6MNwXF4W_7noWXFZAfHkxZsRGC9Xs"


# --- rotation ----------------------------------------------------------------------------------------


def test_the_first_key_signs_and_the_jwks_publishes_both(client, use_keys, key_files):
    use_keys(private=[key_files["paths"]["new"], key_files["paths"]["old"]])

    token = sign(_claims())

    assert jwt.get_unverified_header(token)["kid"] == _kid(key_files["new"])
    assert keyring().signing_kid == _kid(key_files["new"])
    assert _kids(client) == [_kid(key_files["new"]), _kid(key_files["old"])]
    assert verify(token)["role"] == "guest"


def test_every_issued_token_uses_the_newest_key(client, use_keys, key_files, household, owner):
    use_keys(private=[key_files["paths"]["new"], key_files["paths"]["old"]])
    anna = household[0]

    login = client.post(
        "/api/v1/auth/guest-login", {"code": anna.code, "last_name": "Müller"}, content_type="application/json"
    )
    pair = organizer_token_pair(owner)
    refreshed = client.post(REFRESH_URL, {"refresh": pair["refresh"]}, content_type="application/json")

    issued = [login.json()["access"], pair["access"], pair["refresh"], refreshed.json()["access"]]
    assert {jwt.get_unverified_header(token)["kid"] for token in issued} == {_kid(key_files["new"])}


def test_a_token_of_the_older_key_still_verifies_after_a_new_key_is_added(client, use_keys, key_files, household):
    anna = household[0]
    use_keys(private=[key_files["paths"]["old"]])
    old_guest_token = guest_access_token(anna)
    old_claims_token = sign(_claims())
    assert jwt.get_unverified_header(old_guest_token)["kid"] == _kid(key_files["old"])

    use_keys(private=[key_files["paths"]["new"], key_files["paths"]["old"]])

    assert verify(old_claims_token)["role"] == "guest"
    assert client.get(RSVP_URL, **_bearer(old_guest_token)).status_code == 200
    assert jwt.get_unverified_header(guest_access_token(anna))["kid"] == _kid(key_files["new"])


def test_a_retired_keys_tokens_still_verify_while_new_ones_use_the_new_key(client, use_keys, key_files, household):
    anna = household[0]
    use_keys(private=[key_files["paths"]["new"], key_files["paths"]["old"]])
    with_old_key = jwt.encode(
        {**_claims(), "iss": "eventsaas", "aud": "eventsaas-api", "iat": int(timezone.now().timestamp())},
        key_files["old"],
        algorithm="RS256",
        headers={"kid": _kid(key_files["old"])},
    )
    use_keys(private=[key_files["paths"]["old"]])
    old_guest_token = guest_access_token(anna)

    use_keys(private=[key_files["paths"]["new"]], retired=[key_files["paths"]["old_public"]])

    assert verify(with_old_key)["role"] == "guest"
    assert client.get(RSVP_URL, **_bearer(old_guest_token)).status_code == 200
    assert _kids(client) == [_kid(key_files["new"]), _kid(key_files["old"])]
    assert keyring().signing_kid == _kid(key_files["new"])
    assert jwt.get_unverified_header(guest_access_token(anna))["kid"] == _kid(key_files["new"])
    assert jwt.get_unverified_header(sign(_claims()))["kid"] == _kid(key_files["new"])


def test_an_organizer_refresh_token_survives_the_rotation(client, use_keys, key_files, owner, tenant):
    use_keys(private=[key_files["paths"]["old"]])
    refresh = organizer_token_pair(owner)["refresh"]

    use_keys(private=[key_files["paths"]["new"]], retired=[key_files["paths"]["old_public"]])
    response = client.post(REFRESH_URL, {"refresh": refresh}, content_type="application/json")

    assert response.status_code == 200, response.content
    access = response.json()["access"]
    assert jwt.get_unverified_header(access)["kid"] == _kid(key_files["new"])
    assert client.get(f"/api/v1/orgs/{tenant.slug}/events", **_bearer(access)).status_code == 200


def test_a_token_from_a_key_no_longer_published_is_refused(client, use_keys, key_files, household, owner):
    anna = household[0]
    use_keys(private=[key_files["paths"]["old"]])
    old_guest_token = guest_access_token(anna)
    old_refresh = organizer_token_pair(owner)["refresh"]
    old_claims_token = sign(_claims())

    use_keys(private=[key_files["paths"]["new"]])

    assert _kids(client) == [_kid(key_files["new"])]
    with pytest.raises(InvalidToken, match="Unknown signing key"):
        verify(old_claims_token)
    response = client.get(RSVP_URL, **_bearer(old_guest_token))
    assert response.status_code == 401
    assert response.json() == {"code": "authentication_failed", "detail": "Unknown signing key"}
    refreshed = client.post(REFRESH_URL, {"refresh": old_refresh}, content_type="application/json")
    assert refreshed.status_code == 401
    assert refreshed.json()["code"] == "token_not_valid"


def test_a_tokens_kid_cannot_borrow_another_published_key(use_keys, key_files):
    """Signed by the old key but naming the new key's kid: the signature is checked against the named key."""
    use_keys(private=[key_files["paths"]["new"], key_files["paths"]["old"]])
    claims = {**_claims(), "iss": "eventsaas", "aud": "eventsaas-api", "iat": int(timezone.now().timestamp())}
    forged = jwt.encode(claims, key_files["old"], algorithm="RS256", headers={"kid": _kid(key_files["new"])})

    with pytest.raises(InvalidToken, match="Invalid token"):
        verify(forged)


def test_the_jwks_is_enough_to_verify_tokens_of_every_published_key(client, use_keys, key_files):
    use_keys(private=[key_files["paths"]["old"]])
    old_token = sign(_claims())
    use_keys(private=[key_files["paths"]["new"]], retired=[key_files["paths"]["old_public"]])
    new_token = sign(_claims())

    key_set = jwt.PyJWKSet.from_dict(client.get(JWKS_URL).json())
    for token in (old_token, new_token):
        key = key_set[jwt.get_unverified_header(token)["kid"]]
        assert jwt.decode(token, key=key, algorithms=["RS256"], audience="eventsaas-api", issuer="eventsaas")


# --- bad key files are refused at start, not at the first token --------------------------------------


def test_a_short_rsa_key_is_refused(use_keys, tmp_path):
    short = tmp_path / "short.pem"
    short.write_bytes(_private_pem(rsa.generate_private_key(public_exponent=65537, key_size=1024)))
    use_keys(private=[str(short)])

    with pytest.raises(ImproperlyConfigured, match="at least 2048 bits"):
        keyring()


def test_a_non_rsa_private_key_is_refused(use_keys, tmp_path):
    ec_file = tmp_path / "ec.pem"
    ec_file.write_bytes(_private_pem(ec.generate_private_key(ec.SECP256R1())))
    use_keys(private=[str(ec_file)])

    with pytest.raises(ImproperlyConfigured, match="RSA private key"):
        keyring()


def test_a_non_rsa_retired_key_is_refused(use_keys, key_files, tmp_path):
    ec_public = tmp_path / "ec.pub.pem"
    ec_public.write_bytes(_public_pem(ec.generate_private_key(ec.SECP256R1())))
    use_keys(private=[key_files["paths"]["new"]], retired=[str(ec_public)])

    with pytest.raises(ImproperlyConfigured, match="RSA public key"):
        keyring()


def test_a_missing_or_unreadable_key_file_is_refused(use_keys, tmp_path):
    garbage = tmp_path / "garbage.pem"
    garbage.write_text("not a key")

    for path in (tmp_path / "missing.pem", garbage):
        use_keys(private=[str(path)])
        with pytest.raises(ImproperlyConfigured, match="Cannot read the JWT signing key"):
            keyring()


# --- production and the development key --------------------------------------------------------------


def test_production_without_private_key_files_refuses(settings, use_keys, tmp_path):
    dev_key = tmp_path / "jwt" / "signing-key.pem"
    settings.IS_PRODUCTION = True
    settings.JWT_DEVELOPMENT_KEY_FILE = str(dev_key)
    use_keys(private=[])

    with pytest.raises(ImproperlyConfigured, match="JWT_PRIVATE_KEY_FILES"):
        keyring()
    assert not dev_key.exists(), "production never falls back to a generated key"


def test_production_with_private_key_files_signs_with_them(settings, use_keys, key_files):
    settings.IS_PRODUCTION = True
    use_keys(private=[key_files["paths"]["new"]])

    assert keyring().signing_kid == _kid(key_files["new"])


def test_the_development_key_is_created_once_with_mode_0600(settings, use_keys, tmp_path):
    dev_key = tmp_path / "var" / "jwt" / "signing-key.pem"
    settings.JWT_DEVELOPMENT_KEY_FILE = str(dev_key)
    use_keys(private=[])

    first = keyring()

    assert dev_key.exists()
    assert stat.S_IMODE(dev_key.stat().st_mode) == 0o600
    assert first.signing_kid == _thumbprint(serialization.load_pem_private_key(dev_key.read_bytes(), None).public_key())
    assert first.signing_key.key_size >= 2048
    assert list(dev_key.parent.iterdir()) == [dev_key], "no temporary file is left behind"
    use_keys(private=[])
    assert keyring().signing_kid == first.signing_kid, "the next start reuses the key"


def test_the_development_key_is_mode_0600_whatever_the_umask(tmp_path):
    import os

    dev_key = tmp_path / "signing-key.pem"
    previous = os.umask(0)
    try:
        _generate_development_key(dev_key)
    finally:
        os.umask(previous)

    assert stat.S_IMODE(dev_key.stat().st_mode) == 0o600


def _assert_one_valid_key(dev_key):
    assert [path.name for path in dev_key.parent.iterdir()] == [dev_key.name], "one key file, no leftovers"
    assert stat.S_IMODE(dev_key.stat().st_mode) == 0o600
    key = serialization.load_pem_private_key(dev_key.read_bytes(), password=None)
    assert isinstance(key, rsa.RSAPrivateKey) and key.key_size >= 2048
    return key


def test_concurrent_first_generation_in_threads_ends_with_one_valid_key(settings, use_keys, tmp_path):
    dev_key = tmp_path / "jwt" / "signing-key.pem"
    settings.JWT_DEVELOPMENT_KEY_FILE = str(dev_key)
    use_keys(private=[])
    workers = 8
    barrier = threading.Barrier(workers)
    kids, errors = [], []

    def first_start():
        try:
            barrier.wait()
            kids.append(keys.keyring.__wrapped__().signing_kid)  # each thread as its own first start
        except Exception as exc:  # noqa: BLE001 - collected and asserted below
            errors.append(exc)

    threads = [threading.Thread(target=first_start) for _ in range(workers)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    assert errors == []
    key = _assert_one_valid_key(dev_key)
    assert set(kids) == {_thumbprint(key.public_key())}, "every start signs with the key that was kept"


def test_concurrent_first_generation_in_processes_ends_with_one_valid_key(tmp_path):
    dev_key = tmp_path / "jwt" / "signing-key.pem"
    context = multiprocessing.get_context("spawn")
    processes = [context.Process(target=_generate_development_key, args=(dev_key,)) for _ in range(4)]
    for process in processes:
        process.start()
    for process in processes:
        process.join(timeout=120)

    assert [process.exitcode for process in processes] == [0] * len(processes)
    _assert_one_valid_key(dev_key)


def test_the_jwks_view_serves_the_configured_keys_as_json(client, use_keys, key_files):
    use_keys(private=[key_files["paths"]["new"]], retired=[key_files["paths"]["old_public"]])

    response = client.get(JWKS_URL)

    assert response.status_code == 200
    document = json.loads(response.content)
    assert [key["kid"] for key in document["keys"]] == [_kid(key_files["new"]), _kid(key_files["old"])]
    for jwk, private in zip(document["keys"], (key_files["new"], key_files["old"]), strict=True):
        assert jwt.PyJWK(jwk).key.public_numbers() == private.public_key().public_numbers()
        assert not {"d", "p", "q", "dp", "dq", "qi"} & set(jwk)
