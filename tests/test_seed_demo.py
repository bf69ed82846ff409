"""seed_demo: idempotent demo data whose printed logins work."""

import json
import uuid
from io import StringIO
from urllib.parse import urlsplit

import pytest
from django.core.management import CommandError, call_command

from billing.models import ConnectedAccount
from events.models import Event, TicketType
from eventsaas.models import AuditLog
from guests.models import Guest
from tenants.models import Membership, Tenant, User


def seed_json() -> dict:
    out = StringIO()
    call_command("seed_demo", "--json", stdout=out)
    return json.loads(out.getvalue())


@pytest.mark.django_db
def test_seed_demo_is_idempotent_and_prints_the_same_logins():
    first = seed_json()
    counts = (
        User.objects.count(),
        Tenant.objects.count(),
        Event.objects.count(),
        Guest.objects.count(),
        TicketType.objects.count(),
    )
    second = seed_json()

    assert (
        User.objects.count(),
        Tenant.objects.count(),
        Event.objects.count(),
        Guest.objects.count(),
        TicketType.objects.count(),
    ) == counts
    # the party, the concert and the free meetup; the concert's two ticket types and the meetup's free one
    assert (counts[2], counts[4]) == (3, 3)
    assert first == second
    assert 45 <= len(first["guests"]) <= 55
    assert Guest.objects.exclude(group_id=None).count() > len(first["guests"]) // 2  # mostly households
    assert {"email", "password"} <= set(first["organizer"])
    assert first["event"]["id"] and all({"code", "last_name"} <= set(g) for g in first["guests"])


@pytest.mark.django_db
def test_printed_logins_work(client):
    data = seed_json()

    # Through the login page, as people log in (django-axes needs the request: client.login() has none).
    login = client.post("/login/", {"username": data["organizer"]["email"], "password": data["organizer"]["password"]})
    assert login.status_code == 302
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
    event = Event.objects.get(slug="demo-concert")
    assert "Ticket shop of “Demo Concert” (General €25.00, Front row €60.00): http://127.0.0.1:" in text
    assert f"/e/{event.pk}/" in text


@pytest.mark.django_db
def test_ticketed_event_is_published_on_sale_and_its_ids_are_real(client):
    data = seed_json()["ticketed_event"]

    event = Event.objects.get(pk=data["id"])
    assert (event.name, event.kind, event.status, event.timezone) == (
        "Demo Concert",
        Event.Kind.TICKETED,
        Event.Status.PUBLISHED,
        "Europe/Madrid",
    )
    assert event.is_on_sale and len(event.questions) == 1
    assert data["shop_url"].endswith(f"/e/{event.pk}/")
    types = {t.pk: t for t in TicketType.objects.filter(event=event)}
    assert [(t["name"], t["price"], t["currency"], t["capacity"]) for t in data["ticket_types"]] == [
        ("General", 2500, "eur", 200),
        ("Front row", 6000, "eur", 5),
    ]
    for listed in data["ticket_types"]:
        ticket_type = types[uuid.UUID(listed["id"])]
        assert (ticket_type.name, ticket_type.tenant_id) == (listed["name"], event.tenant_id)
        assert ticket_type.is_in_sales_window() and not ticket_type.access_code

    shop = client.get(urlsplit(data["shop_url"]).path)
    page = shop.content.decode()
    assert shop.status_code == 200
    assert "Demo Concert" in page and "€25.00" in page and "€60.00" in page


@pytest.mark.django_db
def test_the_organizers_changes_to_the_demo_survive_the_next_start(client):
    """bin/run seeds at every start: a deleted ticket type must not come back on sale, nor a renamed one twice."""
    first = seed_json()
    general, front_row = first["ticketed_event"]["ticket_types"]
    TicketType.objects.filter(pk=front_row["id"]).delete()
    TicketType.objects.filter(pk=general["id"]).update(name="General admission")
    Guest.objects.filter(event_id=first["event"]["id"]).delete()
    Event.objects.filter(pk=first["free_event_id"]).delete()
    counts = (Event.objects.count(), TicketType.objects.count(), Guest.objects.count())

    again = seed_json()

    assert (Event.objects.count(), TicketType.objects.count(), Guest.objects.count()) == counts
    assert [t["name"] for t in again["ticketed_event"]["ticket_types"]] == ["General admission"]
    assert again["free_event_id"] is None and again["guests"] == []
    assert again["organizer"] == first["organizer"]  # the logins are printed as before
    text = StringIO()
    call_command("seed_demo", stdout=text)
    assert "General admission €25.00" in text.getvalue() and "Free registration" not in text.getvalue()


@pytest.mark.django_db
def test_ticket_types_missing_after_a_partial_seed_are_added(client):
    first = seed_json()["ticketed_event"]
    TicketType.objects.filter(pk=first["ticket_types"][1]["id"]).delete()
    AuditLog.objects.filter(action="demo.seeded").delete()  # cut short before its last step (MongoDB: no transaction)

    again = seed_json()["ticketed_event"]

    assert again["id"] == first["id"]
    assert again["ticket_types"][0] == first["ticket_types"][0]
    assert (
        again["ticket_types"][1]["name"] == "Front row"
        and again["ticket_types"][1]["id"] != first["ticket_types"][1]["id"]
    )


@pytest.mark.django_db
def test_no_two_members_of_a_household_share_a_first_name():
    """The household form and its questions name members by first name ("Is Lisa not coming?")."""
    guests = seed_json()["guests"]
    households: dict = {}
    for guest in guests:
        if guest["group_id"]:
            households.setdefault(guest["group_id"], []).append(guest["first_name"])

    assert households and all(len(names) == len(set(names)) for names in households.values())
    assert {"Pérez", "Álvarez", "O'Brien"} <= {g["last_name"] for g in guests}  # accents and apostrophes to search


@pytest.mark.django_db
def test_the_free_event_registers_without_any_payment_mode(client, settings, mailoutbox):
    settings.TEST_PAYMENTS, settings.STRIPE_SECRET_KEY = False, ""  # production without Stripe keys
    event = Event.objects.get(pk=seed_json()["free_event_id"])
    (free,) = TicketType.objects.filter(event=event)
    assert (event.kind, event.is_on_sale, free.price) == (Event.Kind.TICKETED, True, 0)

    shown = client.get(f"/e/{event.pk}/")
    registered = client.post(
        f"/e/{event.pk}/",
        {"buyer_name": "Ana García", "buyer_email": "ana@example.com", f"qty_{free.pk}": "1", "code": ""},
    )

    assert shown.status_code == 200 and 'data-testid="register"' in shown.content.decode()
    assert registered.status_code == 303
    assert Guest.objects.filter(event=event, last_name="García").count() == 1


@pytest.mark.django_db
def test_the_demo_organization_has_a_simulated_account_that_takes_charges(client):
    data = seed_json()
    account = data["connected_account"]

    stored = ConnectedAccount.objects.get(tenant__slug=data["organizer"]["organization"])
    assert account == {
        "id": stored.stripe_account_id,
        "simulated": True,
        "charges_enabled": True,
        "payouts_enabled": True,
        "details_submitted": True,
    }
    assert stored.stripe_account_id.startswith("acct_localtest_") and stored.synced_at is not None
    assert seed_json()["connected_account"] == account  # idempotent
    assert ConnectedAccount.objects.count() == 1
    # Paid tickets of the demo are on sale: the shop offers their quantity fields.
    page = client.get(urlsplit(data["ticketed_event"]["shop_url"]).path).content.decode()
    assert 'data-testid="paid-not-on-sale"' not in page
    assert all(f'name="qty_{t["id"]}"' in page for t in data["ticketed_event"]["ticket_types"])


@pytest.mark.django_db
def test_seed_demo_refuses_a_production_installation_unless_told_it_is_a_throwaway(settings):
    """Its passwords are public (in the README and its own output), a superuser's among them."""
    settings.IS_PRODUCTION = True

    with pytest.raises(CommandError, match="--allow-production"):
        call_command("seed_demo", "--json", stdout=StringIO())
    assert not User.objects.exists() and not Tenant.objects.exists()

    settings.SITE_URL = "https://events.example.com"
    out = StringIO()
    call_command("seed_demo", "--json", "--allow-production", stdout=out)
    data = json.loads(out.getvalue())
    assert User.objects.filter(email=data["organizer"]["email"]).exists()
    # Its links are the installation's, not this machine's loopback.
    assert data["url"] == "https://events.example.com"
    assert data["ticketed_event"]["shop_url"].startswith("https://events.example.com/e/")
