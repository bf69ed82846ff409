"""API errors speak the client's language: Spanish with `Accept-Language: es`, English otherwise.

LocaleMiddleware picks the language from the header before DRF runs; every message the API writes itself
is marked for translation (locale/es), and Django's and DRF's own messages come from their catalogues.
"""

# The organizer fixtures are imported; test arguments name them (ruff cannot tell).
# ruff: noqa: F811

import pytest
from django.utils import translation

from tenants.tokens import organizer_token_pair
from tests.api.organizer_fixtures import api_client, errors_of, guest_api, owner_api, viewer_api  # noqa: F401

pytestmark = pytest.mark.django_db

ES = {"HTTP_ACCEPT_LANGUAGE": "es"}


@pytest.fixture(autouse=True)
def _keep_active_language():
    # A request activates its language on this thread; do not let Spanish leak into other tests.
    yield
    translation.activate("en")


def test_a_refused_write_is_explained_in_spanish_when_asked_and_in_english_otherwise(viewer_api, event):
    url = f"/api/v1/events/{event.pk}"

    spanish = viewer_api.patch(url, {"name": "Nope"}, format="json", **ES)
    english = viewer_api.patch(url, {"name": "Nope"}, format="json")

    assert spanish.status_code == english.status_code == 403
    assert spanish.json() == {
        "code": "permission_denied",
        "detail": "Tu rol puede ver esta organización, no modificarla.",
    }
    assert english.json()["detail"] == "Your role can read this organization, not change it."
    assert spanish["Content-Language"] == "es" and english["Content-Language"] == "en"


def test_a_bad_filter_and_an_unknown_field_are_named_in_spanish(owner_api, event):
    bad_filter = errors_of(owner_api.get(f"/api/v1/events/{event.pk}/guests", {"never_logged_in": "quizás"}, **ES))
    unknown = errors_of(owner_api.patch(f"/api/v1/events/{event.pk}", {"colour": "red"}, format="json", **ES))
    english = errors_of(owner_api.get(f"/api/v1/events/{event.pk}/guests", {"never_logged_in": "quizás"}))

    assert bad_filter == {"never_logged_in": ["Indica true o false."]}
    assert unknown == {"colour": ["Campo desconocido."]}
    assert english == {"never_logged_in": ["Give true or false."]}


def test_token_errors_are_translated(guest_api, event):
    malformed = api_client().get(f"/api/v1/events/{event.pk}", HTTP_AUTHORIZATION="Bearer", **ES)
    garbage = api_client("not-a-token").get(f"/api/v1/events/{event.pk}", **ES)
    wrong_audience = guest_api.get(f"/api/v1/events/{event.pk}", **ES)

    assert malformed.status_code == garbage.status_code == 401
    assert malformed.json()["detail"] == "La cabecera Authorization debe ser 'Bearer <token>'."
    assert garbage.json()["detail"] == "Token mal formado"
    assert wrong_audience.status_code == 403
    assert wrong_audience.json()["detail"] == "Este punto de acceso es para organizadores."


def test_a_failed_login_is_explained_in_spanish(db):
    response = api_client().post(
        "/api/v1/auth/token", {"email": "nobody@example.com", "password": "wrong"}, format="json", **ES
    )

    assert response.status_code == 401
    assert response.json() == {"code": "invalid_credentials", "detail": "Correo o contraseña incorrectos."}


def test_an_access_token_sent_as_refresh_token_is_explained_in_spanish(owner):
    access = organizer_token_pair(owner)["access"]

    spanish = api_client().post("/api/v1/auth/token/refresh", {"refresh": access}, format="json", **ES)
    english = api_client().post("/api/v1/auth/token/refresh", {"refresh": access}, format="json")

    assert spanish.status_code == english.status_code == 401
    # Django REST framework SimpleJWT's own message, from its catalogue.
    assert spanish.json() == {"code": "token_not_valid", "detail": "El token tiene un tipo incorrecto"}
    assert english.json() == {"code": "token_not_valid", "detail": "Token has wrong type"}
