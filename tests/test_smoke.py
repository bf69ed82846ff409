import pytest


@pytest.mark.parametrize("path", ["/", "/rsvp/", "/login/", "/signup/", "/password-reset/"])
def test_public_pages_render(client, db, path):
    assert client.get(path).status_code == 200
