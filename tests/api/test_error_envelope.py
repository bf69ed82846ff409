"""Every API error is the JSON envelope, also where no API view answers: a path that matches none (a bad id fails
its converter before DRF sees it) and an error DRF does not handle. Pages keep their HTML."""

from unittest import mock

import pytest
from django.core.exceptions import ImproperlyConfigured
from django.test import Client

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize(
    "path", ["/api/v1/nope", "/api/v1/events/not-a-uuid/stats", "/api/v1/orders/None", "/api/v1/events/"]
)
def test_an_api_path_that_matches_no_view_is_a_json_404(client, path):
    response = client.get(path)

    assert response.status_code == 404
    assert response["Content-Type"] == "application/json"
    assert response.json()["code"] == "not_found"


def test_a_page_that_does_not_exist_is_still_the_html_404(client):
    response = client.get("/no-such-page/")

    assert response.status_code == 404 and response["Content-Type"].startswith("text/html")


def test_an_error_in_an_api_view_is_a_json_500_without_the_error(household):
    anna, _lisa = household
    broken = ImproperlyConfigured("Set JWT_PRIVATE_KEY_FILES in production")
    with mock.patch("tenants.tokens.keyring", side_effect=broken):
        response = Client(raise_request_exception=False).post(
            "/api/v1/auth/guest-login",
            {"code": anna.code, "last_name": anna.last_name},
            content_type="application/json",
        )

    assert response.status_code == 500
    assert response["Content-Type"] == "application/json"
    assert response.json()["code"] == "server_error"
    assert "JWT" not in response.content.decode()
