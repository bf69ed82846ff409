"""The waitlist of sold-out ticket types: joining, offers when seats free up, their expiry, claiming the held seat."""

import datetime as dt
import re

import pytest
from django.core import mail
from django.core.cache import cache
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.utils import timezone
from rest_framework.test import APIClient

from billing import notifications, payments, services
from billing.models import Order, Ticket, WaitlistEntry
from events import services as events_services
from events.models import TicketType
from eventsaas.dates import format_event_datetime
from tenants.tokens import organizer_token_pair
from tests.billing.conftest import buy, fresh, seats
from tests.factories import MembershipFactory, TenantFactory, TicketedEventFactory, TicketTypeFactory
from tests.support.backends import tasks_left_queued

pytestmark = pytest.mark.django_db


@pytest.fixture
def concert(tenant):
    return TicketedEventFactory(tenant=tenant, name="Demo Concert", timezone="Europe/Madrid")


@pytest.fixture
def front_row(concert):
    """Two seats, both sold (paid) by the time the test starts: sold out."""
    ticket_type = TicketTypeFactory(event=concert, name="Front row", price=6000, capacity=2)
    return ticket_type


@pytest.fixture
def run_on_commit(django_capture_on_commit_callbacks):
    """Run the on-commit tasks (offers, emails) the way a committed request would, eagerly."""

    def runner():
        return django_capture_on_commit_callbacks(execute=True)

    return runner


def pay(order: Order) -> Order:
    services.webhook_event_process(webhook_event=services.order_simulate_payment(order=order))
    return fresh(order)


def join(event, ticket_type, email, *, language="en", name=""):
    return services.waitlist_join(event=event, ticket_type_id=ticket_type.pk, email=email, name=name, language=language)


def text_of(response) -> str:
    return " ".join(re.sub(r"<[^>]+>", " ", response.content.decode()).split())


def sold_out_with_pending(concert, front_row):
    """Front row held by two pending orders (one seat each): sold out, each order able to free a seat."""
    return [buy(concert, (front_row, 1), email=f"buyer{n}@example.com") for n in range(2)]


def waitlist_mail() -> list:
    """The emails sent to people on the waitlist (buyers of closed orders get their own)."""
    return [m for m in mail.outbox if not m.to[0].startswith("buyer")]


def entry_url(entry: WaitlistEntry) -> str:
    """The joiner's link (the join's redirect, the API's `url`): the entry's page for its whole life."""
    return services.waitlist_entry_path(entry)


def offer_url(entry: WaitlistEntry) -> str:
    """The current offer's emailed link: the only one that buys the held seat."""
    return services.waitlist_offer_path(entry)


def emailed_path(email) -> str:
    """The entry page's path in an offer email."""
    [path] = re.findall(r"https?://[^/\s]+(/waitlist/\S+/)", email.body)
    return path


# --- Joining -------------------------------------------------------------------------------------


def test_the_shop_offers_the_waitlist_on_a_sold_out_type_and_joining_leads_to_the_entry_page(
    client, concert, front_row
):
    sold_out_with_pending(concert, front_row)

    shop = client.get(f"/e/{concert.pk}/")
    assert shop.status_code == 200
    assert "Join the waitlist" in text_of(shop)

    response = client.post(
        f"/e/{concert.pk}/waitlist/", {"ticket_type": str(front_row.pk), "email": "Wait@Example.com", "name": "Wanda"}
    )

    entry = WaitlistEntry.objects.get()
    assert (entry.email, entry.name, entry.status, entry.tenant_id) == (
        "wait@example.com",
        "Wanda",
        WaitlistEntry.Status.WAITING,
        concert.tenant_id,
    )
    assert response.status_code == 302
    assert response.url == entry_url(entry)
    page = client.get(response.url)
    assert "You are on the waitlist" in text_of(page)
    assert "Leave the waitlist" in text_of(page)


@pytest.mark.parametrize(
    ("email", "message"),
    [("", "This field is required."), ("not-an-email", "Enter a valid email address.")],
)
def test_joining_with_a_bad_email_is_a_400_with_the_fields_message(client, concert, front_row, email, message):
    sold_out_with_pending(concert, front_row)

    response = client.post(f"/e/{concert.pk}/waitlist/", {"ticket_type": str(front_row.pk), "email": email})

    assert response.status_code == 400
    assert message in text_of(response)
    assert not WaitlistEntry.objects.exists()


def test_a_type_with_seats_left_cannot_be_joined(client, concert):
    general = TicketTypeFactory(event=concert, name="General", capacity=10)

    response = client.post(f"/e/{concert.pk}/waitlist/", {"ticket_type": str(general.pk), "email": "a@example.com"})

    assert response.status_code == 400
    assert "is not sold out: buy a ticket instead." in text_of(response)
    assert not WaitlistEntry.objects.exists()


def test_another_events_type_cannot_be_joined_through_this_event(client, concert, front_row):
    sold_out_with_pending(concert, front_row)
    other = TicketedEventFactory(tenant=TenantFactory())
    other_type = TicketTypeFactory(event=other, capacity=1)
    buy(other, (other_type, 1))

    response = client.post(f"/e/{concert.pk}/waitlist/", {"ticket_type": str(other_type.pk), "email": "a@example.com"})

    assert response.status_code == 400
    assert not WaitlistEntry.objects.exists()


def test_the_same_address_cannot_be_in_line_twice_but_may_join_again_after_leaving(concert, front_row):
    sold_out_with_pending(concert, front_row)
    first = join(concert, front_row, "ada@example.com")

    with pytest.raises(Exception, match="already on the waitlist"):
        join(concert, front_row, " ADA@example.com ")
    assert services.waitlist_leave(entry=first)
    again = join(concert, front_row, "ada@example.com")

    assert again.pk == first.pk
    assert again.status == WaitlistEntry.Status.WAITING
    assert again.token != first.token  # the old page's link no longer leads anywhere
    assert again.created_at > first.created_at  # the back of the line


def test_joining_is_throttled_with_checkout(client, concert, front_row, settings):
    sold_out_with_pending(concert, front_row)
    settings.TICKET_CHECKOUT_RATE_PER_CLIENT = "3/h"
    cache.clear()
    for n in range(3):
        client.post(f"/e/{concert.pk}/waitlist/", {"ticket_type": str(front_row.pk), "email": f"a{n}@example.com"})

    throttled = client.post(f"/e/{concert.pk}/waitlist/", {"ticket_type": str(front_row.pk), "email": "z@example.com"})

    assert throttled.status_code == 429
    assert throttled["Retry-After"] == "60"
    assert WaitlistEntry.objects.count() == 3


def test_the_api_joins_and_refuses_a_second_join_of_the_same_address(client, concert, front_row):
    sold_out_with_pending(concert, front_row)
    url = f"/api/v1/events/{concert.pk}/waitlist/entries"
    body = {"ticket_type": str(front_row.pk), "email": "api@example.com"}

    created = client.post(url, body, content_type="application/json")
    again = client.post(url, body, content_type="application/json")
    bad = client.post(url, {**body, "email": "nope"}, content_type="application/json")

    assert created.status_code == 201
    assert created.json()["status"] == "waiting"
    assert created.json()["url"].endswith(entry_url(WaitlistEntry.objects.get()))
    assert again.status_code == 400
    assert "email" in again.json()["errors"]
    assert bad.status_code == 400
    assert WaitlistEntry.objects.count() == 1


# --- Offers --------------------------------------------------------------------------------------


def test_an_expired_order_offers_its_seat_to_the_first_in_line_with_an_email(concert, front_row, run_on_commit):
    orders = sold_out_with_pending(concert, front_row)
    first = join(concert, front_row, "first@example.com")
    second = join(concert, front_row, "second@example.com")
    mail.outbox.clear()

    with run_on_commit():
        services.order_close(order=orders[0], to=Order.Status.EXPIRED, reason="sweep")

    first, second = fresh(first), fresh(second)
    assert first.status == WaitlistEntry.Status.OFFERED
    assert second.status == WaitlistEntry.Status.WAITING
    assert seats(front_row) == (0, 2)  # the freed seat is held for the offer, not for sale
    assert first.offer_expires_at - first.offered_at == dt.timedelta(minutes=60)
    [email] = waitlist_mail()  # (the expired order's buyer is told too, by their own email)
    assert email.to == ["first@example.com"]
    assert offer_url(first) in email.body
    assert entry_url(first) not in email.body  # the joiner's link is not the offer's
    # The hold's end in the event's zone (Madrid), as the buyer reads their clock.
    assert format_event_datetime(first.offer_expires_at, "Europe/Madrid") in email.body
    assert re.search(r"CES?T", email.body)


def test_a_refund_frees_the_seat_and_offers_it(concert, front_row, run_on_commit):
    orders = sold_out_with_pending(concert, front_row)
    paid = pay(orders[0])
    entry = join(concert, front_row, "first@example.com")

    with run_on_commit():
        services.order_refund(order=paid, acting_user=None)

    assert fresh(entry).status == WaitlistEntry.Status.OFFERED
    assert seats(front_row) == (0, 2)


def test_raising_the_capacity_offers_the_new_seats_in_line_order(concert, front_row, run_on_commit, owner):
    sold_out_with_pending(concert, front_row)
    entries = [join(concert, front_row, f"w{n}@example.com") for n in range(3)]

    with run_on_commit():
        events_services.ticket_type_update(ticket_type=front_row, acting_user=owner, capacity=4)

    assert [fresh(e).status for e in entries] == ["offered", "offered", "waiting"]
    assert seats(front_row) == (0, 4)


def test_joining_marks_the_type_before_its_first_entry_is_stored_and_the_mark_stays(concert, front_row, monkeypatch):
    sold_out_with_pending(concert, front_row)
    assert fresh(front_row).waitlist_started_at is None
    marked_when_stored = []
    store = WaitlistEntry.save

    def save(entry, *args, **kwargs):
        marked_when_stored.append(TicketType.objects.get(pk=entry.ticket_type_id).waitlist_started_at is not None)
        return store(entry, *args, **kwargs)

    monkeypatch.setattr(WaitlistEntry, "save", save)
    first = join(concert, front_row, "w0@example.com")
    started = fresh(front_row).waitlist_started_at
    services.waitlist_leave(entry=first)  # the line is empty again: the mark stays
    join(concert, front_row, "w1@example.com")

    assert marked_when_stored == [True, True]
    assert started is not None and fresh(front_row).waitlist_started_at == started


def test_a_type_nobody_ever_waited_for_is_sold_and_listed_without_reading_the_waitlist(concert, front_row):
    sold_out_with_pending(concert, front_row)
    join(concert, front_row, "w0@example.com")  # another type's line
    open_type = TicketTypeFactory(event=concert, name="Standing", price=1000, capacity=10)

    with CaptureQueriesContext(connection) as queries:
        order = buy(concert, (open_type, 1))
        listed = APIClient().get(f"/api/v1/events/{concert.pk}/ticket-types")

    assert order.status == "pending" and seats(open_type) == (0, 1)
    assert {row["name"]: row["remaining"] for row in listed.json()} == {"Front row": 0, "Standing": 9}
    # The listing asks about Front row's line (it has one, and is sold out anyway); checkout asks nothing.
    assert len([q for q in queries if "billing_waitlistentry" in q["sql"]]) == 1


def test_checkout_past_people_waiting_is_a_409_that_shows_no_seat_left(concert, front_row, owner):
    sold_out_with_pending(concert, front_row)
    join(concert, front_row, "w0@example.com")
    with tasks_left_queued():  # a seat freed with its offer lost: free, but someone waits
        events_services.ticket_type_update(ticket_type=front_row, acting_user=owner, capacity=3)

    response = APIClient().post(
        f"/api/v1/events/{concert.pk}/checkout",
        {
            "items": [{"ticket_type": str(front_row.pk), "quantity": 1}],
            "buyer": {"name": "Jumper", "email": "jumper@example.com"},
        },
        format="json",
    )

    assert response.status_code == 409
    assert response.json()["ticket_types"] == [{"id": str(front_row.pk), "name": "Front row", "remaining": 0}]
    assert seats(front_row) == (0, 2) and Order.objects.filter(buyer_email="jumper@example.com").count() == 0


def test_the_public_shop_cannot_buy_past_people_waiting(client, concert, front_row, run_on_commit, owner):
    sold_out_with_pending(concert, front_row)
    join(concert, front_row, "w0@example.com")
    # A seat freed with the offer lost (a crash before the commit hook): it is free, but someone waits.
    with tasks_left_queued():
        events_services.ticket_type_update(ticket_type=front_row, acting_user=owner, capacity=3)
    assert seats(front_row) == (0, 2)

    with pytest.raises(services.SoldOut):
        buy(concert, (front_row, 1), email="jumper@example.com")
    shop = client.get(f"/e/{concert.pk}/")
    assert "Sold out" in text_of(shop)

    assert services.waitlist_sweep() == {"expired": 0, "offered": 1}
    assert seats(front_row) == (0, 3)


def test_an_unused_offer_expires_and_passes_to_the_next_with_an_email_each(concert, front_row, run_on_commit):
    orders = sold_out_with_pending(concert, front_row)
    first = join(concert, front_row, "first@example.com")
    second = join(concert, front_row, "second@example.com", language="es")
    with run_on_commit():
        services.order_close(order=orders[0], to=Order.Status.EXPIRED, reason="sweep")
    mail.outbox.clear()

    with run_on_commit():
        assert services.waitlist_offers_expire_due(now=timezone.now()) == 0  # not due yet
        later = fresh(first).offer_expires_at + dt.timedelta(seconds=1)
        assert services.waitlist_sweep(now=later) == {"expired": 1, "offered": 0}

    assert fresh(first).status == WaitlistEntry.Status.EXPIRED
    assert fresh(second).status == WaitlistEntry.Status.OFFERED
    assert seats(front_row) == (0, 2)
    by_recipient = {m.to[0]: m for m in waitlist_mail()}
    assert sorted(by_recipient) == ["first@example.com", "second@example.com"]
    assert "has expired" in by_recipient["first@example.com"].subject
    assert "Demo Concert" in by_recipient["second@example.com"].subject
    # In the entry's language.
    assert by_recipient["second@example.com"].subject.startswith("Una entrada")
    assert "Compra tu entrada" in by_recipient["second@example.com"].body


def test_leaving_with_an_offer_passes_the_seat_on(client, concert, front_row, run_on_commit):
    orders = sold_out_with_pending(concert, front_row)
    first = join(concert, front_row, "first@example.com")
    second = join(concert, front_row, "second@example.com")
    with run_on_commit():
        services.order_close(order=orders[0], to=Order.Status.CANCELLED, reason="buyer_cancelled")
    first = fresh(first)

    with run_on_commit():
        response = client.post(entry_url(first), {"action": "leave"})

    assert response.status_code == 302
    assert fresh(first).status == WaitlistEntry.Status.LEFT
    assert fresh(second).status == WaitlistEntry.Status.OFFERED
    assert seats(front_row) == (0, 2)


# --- Claiming --------------------------------------------------------------------------------------


def test_the_offer_link_buys_the_held_seat_once(client, concert, front_row, run_on_commit):
    orders = sold_out_with_pending(concert, front_row)
    entry = join(concert, front_row, "first@example.com")
    with run_on_commit():
        services.order_close(order=orders[0], to=Order.Status.EXPIRED, reason="sweep")
    entry = fresh(entry)

    page = client.get(offer_url(entry))
    assert "A seat is held for you" in text_of(page)
    response = client.post(offer_url(entry), {"action": "buy", "buyer_name": "Fiona First"})

    assert response.status_code == 303
    order = Order.objects.get(buyer_email="first@example.com")
    assert response.url == order.checkout_url
    assert (order.quantity, order.total, order.status) == (1, 6000, Order.Status.PENDING)
    assert seats(front_row) == (0, 2)  # the held seat became the order's: nothing new reserved
    entry = fresh(entry)
    assert (entry.status, entry.order_id) == (WaitlistEntry.Status.CLAIMED, order.pk)

    again = client.post(offer_url(entry), {"action": "buy", "buyer_name": "Fiona First"})
    assert again.status_code == 400
    assert "This offer has expired or was already used." in text_of(again)
    assert Order.objects.filter(buyer_email="first@example.com").count() == 1

    pay(order)
    assert seats(front_row) == (1, 1)
    assert Ticket.objects.filter(order=order).count() == 1


def test_an_expired_offer_link_cannot_buy(client, concert, front_row, run_on_commit):
    orders = sold_out_with_pending(concert, front_row)
    entry = join(concert, front_row, "first@example.com")
    with run_on_commit():
        services.order_close(order=orders[0], to=Order.Status.EXPIRED, reason="sweep")
    WaitlistEntry.objects.filter(pk=entry.pk).update(offer_expires_at=timezone.now() - dt.timedelta(seconds=1))
    entry = fresh(entry)

    response = client.post(offer_url(entry), {"action": "buy", "buyer_name": "Late"})

    assert response.status_code == 400
    assert not Order.objects.filter(buyer_email="first@example.com").exists()


def test_a_wrong_token_or_unknown_entry_is_a_404(client, concert, front_row):
    sold_out_with_pending(concert, front_row)
    entry = join(concert, front_row, "first@example.com")

    assert client.get(f"/waitlist/{entry.pk}/{'x' * 22}/").status_code == 404
    assert client.post(f"/waitlist/{entry.pk}/{'x' * 22}/", {"action": "leave"}).status_code == 404
    assert fresh(entry).status == WaitlistEntry.Status.WAITING


def test_the_api_entry_url_keeps_working_through_the_offer_and_cannot_buy_it(client, concert, front_row, run_on_commit):
    orders = sold_out_with_pending(concert, front_row)
    paid = pay(orders[0])
    created = client.post(
        f"/api/v1/events/{concert.pk}/waitlist/entries",
        {"ticket_type": str(front_row.pk), "email": "first@example.com"},
        content_type="application/json",
    )
    joined = re.sub(r"^https?://[^/]+", "", created.json()["url"])
    mail.outbox.clear()
    with run_on_commit():
        services.order_refund(order=paid, acting_user=None)  # the operator's repro: a refund frees the seat
    [email] = waitlist_mail()
    emailed = emailed_path(email)

    # The joiner's URL still leads to the entry and shows the offer, but not the buy form: that is the email's.
    page = client.get(joined)
    assert page.status_code == 200
    assert "A seat is held for you" in text_of(page)
    assert "open the link in the email sent to first@example.com" in text_of(page)
    assert 'value="buy"' not in page.content.decode()
    refused = client.post(joined, {"action": "buy", "buyer_name": "Not The Mailbox"})
    assert refused.status_code == 403
    assert "open the link in the offer email" in text_of(refused)
    assert not Order.objects.filter(buyer_email="first@example.com").exists()
    assert fresh(WaitlistEntry.objects.get()).status == WaitlistEntry.Status.OFFERED

    # The emailed link buys it; the joiner's URL then shows the claimed entry.
    assert emailed != joined and 'value="buy"' in client.get(emailed).content.decode()
    assert client.post(emailed, {"action": "buy", "buyer_name": "Fiona First"}).status_code == 303
    after = client.get(joined)
    assert after.status_code == 200
    assert "You took this offer" in text_of(after)


def test_the_join_link_can_leave_an_offered_entry_and_shows_an_expired_one(client, concert, front_row, run_on_commit):
    orders = sold_out_with_pending(concert, front_row)
    joined = client.post(f"/e/{concert.pk}/waitlist/", {"ticket_type": str(front_row.pk), "email": "a@example.com"})
    later = client.post(f"/e/{concert.pk}/waitlist/", {"ticket_type": str(front_row.pk), "email": "b@example.com"})
    with run_on_commit():
        services.order_close(order=orders[0], to=Order.Status.EXPIRED, reason="sweep")

    with run_on_commit():
        assert client.post(joined.url, {"action": "leave"}).status_code == 302

    first, second = WaitlistEntry.objects.order_by("created_at")
    assert first.status == WaitlistEntry.Status.LEFT
    assert second.status == WaitlistEntry.Status.OFFERED  # the held seat went on to the next in line
    assert "You left the waitlist." in text_of(client.get(joined.url))
    with run_on_commit():
        services.waitlist_sweep(now=second.offer_expires_at + dt.timedelta(seconds=1))
    assert "This offer has expired" in text_of(client.get(later.url))


# Outside a test transaction, as in production: on_commit callbacks run at once (on SQL in autocommit, always on
# MongoDB), so the seat the failed order frees is offered the moment it is freed, and the entry must be back first.
@pytest.mark.django_db(transaction=True)
def test_a_payment_failure_after_claiming_puts_the_entry_back_first_in_line(concert, front_row, run_on_commit):
    orders = sold_out_with_pending(concert, front_row)
    entry = join(concert, front_row, "first@example.com")
    second = join(concert, front_row, "second@example.com")
    with run_on_commit():
        services.order_close(order=orders[0], to=Order.Status.EXPIRED, reason="sweep")
    entry = fresh(entry)
    first_offer = offer_url(entry)

    def failing(**kwargs):
        raise payments.PaymentProviderError("down")

    with run_on_commit(), pytest.MonkeyPatch.context() as patch:
        patch.setattr(payments, "checkout_session_create", failing)
        with pytest.raises(services.PaymentsUnavailable):
            services.checkout_start_from_offer(
                entry=entry,
                token=entry.offer_token,
                request=services.CheckoutRequest(items=[], buyer_name="F", buyer_email=entry.email),
            )

    # The seat went back and was offered again to the same person, still first in line; the next one waits.
    assert fresh(entry).status == WaitlistEntry.Status.OFFERED
    assert fresh(second).status == WaitlistEntry.Status.WAITING
    assert seats(front_row) == (0, 2)
    # The new offer has a new emailed link; the first offer's is dead, the joiner's link stays.
    assert offer_url(fresh(entry)) != first_offer
    assert Client().get(first_offer).status_code == 404
    assert Client().get(offer_url(entry)).status_code == 200
    assert Client().get(entry_url(entry)).status_code == 200


# --- Emails --------------------------------------------------------------------------------------


def test_each_offer_email_is_sent_once_even_when_the_task_runs_again(concert, front_row, run_on_commit):
    orders = sold_out_with_pending(concert, front_row)
    entry = join(concert, front_row, "first@example.com")
    with run_on_commit():
        services.order_close(order=orders[0], to=Order.Status.EXPIRED, reason="sweep")
    entry = fresh(entry)
    assert len(waitlist_mail()) == 1

    assert notifications.waitlist_offer_send(entry=entry) is False
    assert notifications.waitlist_offer_expired_send(entry=entry) is False  # not expired
    assert len(waitlist_mail()) == 1


# --- The organizer ---------------------------------------------------------------------------------


def test_the_organizer_sees_the_waitlist_per_type(client, concert, front_row, owner):
    sold_out_with_pending(concert, front_row)
    join(concert, front_row, "first@example.com", name="Fiona")
    join(concert, front_row, "second@example.com")
    client.force_login(owner)

    response = client.get(f"/o/{concert.tenant.slug}/events/{concert.pk}/waitlist/")

    assert response.status_code == 200
    assert [(r["ticket_type"].name, r["waiting"], r["offered"]) for r in response.context["types"]] == [
        ("Front row", 2, 0)
    ]
    body = text_of(response)
    assert body.index("first@example.com") < body.index("second@example.com")


def test_another_organizations_member_gets_404_on_the_waitlist_page_and_api(client, concert, front_row):
    sold_out_with_pending(concert, front_row)
    join(concert, front_row, "first@example.com")
    stranger = MembershipFactory(tenant=TenantFactory()).user
    client.force_login(stranger)

    assert client.get(f"/o/{concert.tenant.slug}/events/{concert.pk}/waitlist/").status_code == 404
    token = organizer_token_pair(stranger)["access"]
    api = client.get(f"/api/v1/events/{concert.pk}/waitlist", HTTP_AUTHORIZATION=f"Bearer {token}")
    assert api.status_code == 404
    assert "first@example.com" not in api.content.decode()


def test_an_offer_for_an_event_asking_names_puts_the_buyers_name_on_the_ticket(client, tenant, run_on_commit):
    gala = TicketedEventFactory(tenant=tenant, attendee_names_required=True)
    seat = TicketTypeFactory(event=gala, name="Seat", capacity=1)
    [order] = [buy(gala, (seat, 1), names=["Holder"])]
    entry = join(gala, seat, "named@example.com")
    with run_on_commit():
        services.order_close(order=order, to=Order.Status.EXPIRED, reason="sweep")

    response = client.post(offer_url(fresh(entry)), {"action": "buy", "buyer_name": "Nadia Named"})

    assert response.status_code == 303
    assert Order.objects.get(buyer_email="named@example.com").attendees[0]["name"] == "Nadia Named"


def test_the_public_ticket_type_list_shows_a_type_held_for_its_waitlist_as_sold_out(client, concert, front_row, owner):
    sold_out_with_pending(concert, front_row)
    join(concert, front_row, "w0@example.com")
    events_services.ticket_type_update(ticket_type=front_row, acting_user=owner, capacity=3)  # no offer ran

    [row] = client.get(f"/api/v1/events/{concert.pk}/ticket-types").json()

    assert (row["remaining"], row["sold_out"]) == (0, True)
