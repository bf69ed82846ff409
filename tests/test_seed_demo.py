"""seed_demo: idempotent demo data whose printed logins work."""

import json
from io import StringIO

import pytest
from django.core.management import call_command

from events.models import Event
from guests.models import Guest
from tenants.models import Membership, Tenant, User


def seed_json() -> dict:
    out = StringIO()
    call_command("seed_demo", "--json", stdout=out)
    return json.loads(out.getvalue())


@pytest.mark.django_db
def test_seed_demo_is_idempotent_and_prints_the_same_logins():
    first = seed_json()
    counts = (User.objects.count(), Tenant.objects.count(), Event.objects.count(), Guest.objects.count())
    second = seed_json()

    assert (User.objects.count(), Tenant.objects.count(), Event.objects.count(), Guest.objects.count()) == counts
    assert first == second
    assert 45 <= len(first["guests"]) <= 55
    assert Guest.objects.exclude(group_id=None).count() > len(first["guests"]) // 2  # mostly households
    assert {"email", "password"} <= set(first["organizer"])
    assert first["event"]["id"] and all({"code", "last_name"} <= set(g) for g in first["guests"])


@pytest.mark.django_db
def test_printed_logins_work(client):
    data = seed_json()

    assert client.login(username=data["organizer"]["email"], password=data["organizer"]["password"])
    membership = Membership.objects.get(user__email=data["organizer"]["email"])
    assert client.get(f"/o/{membership.tenant.slug}/events/{data['event']['id']}/").status_code == 200
    client.logout()
    for guest in data["featured_guests"]:
        response = client.post("/rsvp/", {"code": guest["code"], "last_name": guest["last_name"]})
        assert response.status_code == 302 and response["Location"] == "/rsvp/answer/"
        assert "Summer Garden Party" in client.get("/rsvp/answer/").content.decode()
        client.post("/rsvp/logout/")


@pytest.mark.django_db
def test_text_output_lists_organizer_and_two_guest_logins():
    out = StringIO()
    call_command("seed_demo", stdout=out)
    text = out.getvalue()
    assert "Organizer login:" in text and text.count("Guest login at /rsvp/:") == 2
