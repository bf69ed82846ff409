"""The site's icon: linked from every page, served as static files, and /favicon.ico answers (WhiteNoise's root)."""

import re

import pytest
from django.contrib.staticfiles import finders


@pytest.mark.django_db
def test_every_page_links_the_icon_and_its_files_are_served(client):
    html = client.get("/").content.decode()

    links = re.findall(r'<link rel="(icon|apple-touch-icon)" href="([^"]+)"', html)
    assert [rel for rel, _href in links] == ["icon", "icon", "apple-touch-icon"]
    for _rel, href in links:
        assert finders.find(href.removeprefix("/static/")), href


@pytest.mark.django_db
def test_favicon_ico_answers_instead_of_404(client):
    response = client.get("/favicon.ico")

    assert response.status_code == 200
    assert response["Content-Type"] == "image/x-icon"
    body = b"".join(response.streaming_content)
    assert body[:4] == b"\x00\x00\x01\x00"  # an ICO header
