"""The organizer's earnings: gross, platform fee, net and refunds per event, per calendar month (in the
organization's time zone) and in all, read from the ledger in a fixed number of queries, with its downloads.
Test-payment mode (no Stripe keys) simulates the fees the same way Stripe takes them."""

import datetime as dt
from decimal import Decimal
from zoneinfo import ZoneInfo

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from billing import payments, selectors, services
from billing.models import ConnectedAccount, LedgerEntry
from billing.services import CheckoutItem, CheckoutRequest
from tenants.models import Role
from tests.factories import MembershipFactory, TicketedEventFactory, TicketTypeFactory
from tests.support.spreadsheets import csv_rows, rows_as_dicts, xlsx_rows

pytestmark = pytest.mark.django_db

MADRID = ZoneInfo("Europe/Madrid")
# 23:30 UTC on 31 October is already 00:30 on 1 November in Madrid: that payment is November's.
NOVEMBER_IN_MADRID = dt.datetime(2026, 10, 31, 23, 30, tzinfo=dt.UTC)


@pytest.fixture
def world(settings, tenant, owner, django_capture_on_commit_callbacks):
    """Test mode with a simulated connected account; 2.5 % + 30 minor units.

    Summer (EUR): order 1, 110.00, fee 3.05, refunded 30.00 (fee 0.83 back); order 2, 25.00, fee 0.93, paid in
    November (Madrid). Gala (JPY): 3000 yen, fee 105 yen. A third event without sales makes Madrid the zone.
    """
    assert payments.payment_mode() == "test"
    settings.PLATFORM_FEE_BASIS_POINTS, settings.PLATFORM_FEE_FIXED = 250, 30
    ConnectedAccount.objects.update_or_create(
        tenant=tenant, defaults={"stripe_account_id": "acct_test1", "is_test": True, "charges_enabled": True}
    )
    summer = TicketedEventFactory(tenant=tenant, name="Summer", timezone="Europe/Madrid")
    gala = TicketedEventFactory(tenant=tenant, name="Gala", timezone="Asia/Tokyo")
    TicketedEventFactory(tenant=tenant, name="Later", timezone="Europe/Madrid")
    standard = TicketTypeFactory(event=summer, price=2500, capacity=10)
    vip = TicketTypeFactory(event=summer, price=6000, capacity=10)
    yen = TicketTypeFactory(event=gala, price=3000, currency="jpy", capacity=10)

    def buy(event, *items):
        with django_capture_on_commit_callbacks(execute=True):
            order = services.checkout_start(
                event=event,
                request=CheckoutRequest(
                    items=[CheckoutItem(ticket_type_id=str(t.pk), quantity=n) for t, n in items],
                    buyer_name="Ann Lee",
                    buyer_email="ann@example.com",
                ),
            )
            services.order_simulate_payment(order=order)
        order.refresh_from_db()
        return order

    first = buy(summer, (standard, 2), (vip, 1))
    services.order_refund(order=first, acting_user=owner, amount=3000)
    second = buy(summer, (standard, 1))
    LedgerEntry.objects.filter(order_id=second.pk).update(created_at=NOVEMBER_IN_MADRID)
    third = buy(gala, (yen, 1))
    return {"summer": summer, "gala": gala, "orders": [first, second, third]}


def test_test_mode_books_the_simulated_fee_with_each_payment_and_refund(world):
    first, second, third = world["orders"]
    assert first.is_test and first.stripe_account_id == "acct_test1"
    booked = [
        (e.kind, e.amount, e.fee, e.net)
        for e in LedgerEntry.objects.filter(order_id__in=[o.pk for o in world["orders"]]).order_by("created_at", "kind")
    ]
    assert sorted(booked) == sorted(
        [
            ("payment", 11000, 305, 10695),
            ("refund", 3000, 83, 2917),
            ("payment", 2500, 93, 2407),
            ("payment", 3000, 105, 2895),
        ]
    )


def test_earnings_per_event_per_month_and_in_all(world, tenant, django_assert_num_queries):
    with django_assert_num_queries(5):
        earnings = selectors.earnings_for(tenant=tenant)

    assert earnings.timezone == "Europe/Madrid"
    by_event = {(e.name, e.totals.currency): e.totals for e in earnings.events}
    summer = by_event[("Summer", "eur")]
    assert (summer.gross, summer.fee, summer.net, summer.refunded, summer.fee_refunded) == (13500, 398, 13102, 3000, 83)
    assert summer.net_after_refunds == 13102 - (3000 - 83) == 10185
    gala = by_event[("Gala", "jpy")]
    assert (gala.gross, gala.fee, gala.net_after_refunds) == (3000, 105, 2895)
    assert ("Later", "eur") not in by_event

    assert [(t.currency, t.gross, t.fee, t.net_after_refunds) for t in earnings.totals] == [
        ("eur", 13500, 398, 10185),
        ("jpy", 3000, 105, 2895),
    ]
    november = [p for p in earnings.periods if p.start == dt.datetime(2026, 11, 1, tzinfo=MADRID)]
    assert [(p.totals.currency, p.totals.gross, p.totals.fee) for p in november] == [("eur", 2500, 93)]
    assert sum(p.totals.gross for p in earnings.periods if p.totals.currency == "eur") == 13500
    assert sum(p.totals.fee_refunded for p in earnings.periods) == 83


def test_earnings_queries_do_not_grow_with_orders(world, tenant, django_capture_on_commit_callbacks):
    summer = world["summer"]
    extra = TicketTypeFactory(event=summer, price=1000, capacity=50)
    for _ in range(5):
        with django_capture_on_commit_callbacks(execute=True):
            order = services.checkout_start(
                event=summer,
                request=CheckoutRequest(
                    items=[CheckoutItem(ticket_type_id=str(extra.pk), quantity=1)],
                    buyer_name="B",
                    buyer_email="b@example.com",
                ),
            )
            services.order_simulate_payment(order=order)
    with CaptureQueriesContext(connection) as queries:
        earnings = selectors.earnings_for(tenant=tenant)
    assert len(queries) == 5
    assert earnings.totals[0].gross == 13500 + 5 * 1000


def test_earnings_page_shows_the_money_in_each_currency(world, tenant, owner):
    client = Client()
    client.force_login(owner)
    response = client.get(reverse("billing_organizer:earnings", kwargs={"tenant_slug": tenant.slug}))
    assert response.status_code == 200
    page = response.content.decode()
    assert "€135.00" in page and "€3.98" in page and "€101.85" in page and "€0.83" in page
    assert "¥3,000" in page and "¥105" in page
    assert "November 2026" in page
    assert "Europe/Madrid" in page
    assert "2.50 % + €0.30 / ¥30 per order" in page
    assert f'href="{reverse("billing_organizer:earnings", kwargs={"tenant_slug": tenant.slug})}"' in page  # the nav


def test_earnings_page_is_in_spanish_for_a_spanish_organizer(world, tenant, owner):
    client = Client()
    client.force_login(owner)
    page = client.get(
        reverse("billing_organizer:earnings", kwargs={"tenant_slug": tenant.slug}), HTTP_ACCEPT_LANGUAGE="es"
    ).content.decode()
    assert "101,85\xa0€" in page


@pytest.mark.parametrize("role", [Role.VIEWER, Role.DOOR, Role.ADMIN])
def test_every_member_reads_the_earnings(world, tenant, role):
    client = Client()
    client.force_login(MembershipFactory(tenant=tenant, role=role).user)
    assert client.get(reverse("billing_organizer:earnings", kwargs={"tenant_slug": tenant.slug})).status_code == 200


def _export(client, tenant, what, file_format):
    return client.get(
        reverse(
            "billing_organizer:earnings-export",
            kwargs={"tenant_slug": tenant.slug, "what": what, "file_format": file_format},
        )
    )


def test_earnings_downloads_per_event_and_per_month(world, tenant, owner):
    client = Client()
    client.force_login(owner)

    response = _export(client, tenant, "events", "csv")
    assert response.status_code == 200
    assert response["Content-Disposition"].startswith(f'attachment; filename="{tenant.slug}-earnings-by-event-')
    rows = {(r["Event"], r["Currency"]): r for r in rows_as_dicts(csv_rows(response))}
    summer = rows[("Summer", "EUR")]
    assert (summer["Gross"], summer["Platform fee"], summer["Net"]) == ("135.00", "3.98", "131.02")
    assert (summer["Refunded"], summer["Fee refunded"], summer["Net after refunds"]) == ("30.00", "0.83", "101.85")
    assert rows[("Gala", "JPY")]["Platform fee"] == "105"

    excel = rows_as_dicts(xlsx_rows(_export(client, tenant, "months", "xlsx")))
    header = "Month (Europe/Madrid)"
    november = [r for r in excel if r[header] and r[header].date() == dt.date(2026, 11, 1)]
    # Excel cells hold binary numbers; the exact decimal is what they show.
    assert [(r["Currency"], Decimal(str(r["Gross"])), Decimal(str(r["Platform fee"]))) for r in november] == [
        ("EUR", Decimal("25"), Decimal("0.93"))
    ]


@pytest.mark.parametrize(("what", "file_format"), [("orders", "csv"), ("events", "pdf")])
def test_unknown_earnings_downloads_do_not_exist(world, tenant, owner, what, file_format):
    client = Client()
    client.force_login(owner)
    assert _export(client, tenant, what, file_format).status_code == 404


def test_order_page_shows_the_fee_and_the_net(world, tenant, owner):
    first = world["orders"][0]
    client = Client()
    client.force_login(owner)
    page = client.get(
        reverse(
            "billing_organizer:order",
            kwargs={"tenant_slug": tenant.slug, "event_id": first.event_id, "order_id": first.pk},
        )
    ).content.decode()
    # Fee kept: 3.05 - 0.83 = 2.22; the organizer keeps 106.95 - 29.17 = 77.78.
    assert 'data-amount="fee">€2.22<' in page
    assert 'data-amount="net">€77.78<' in page
    assert "€29.17" in page  # the refund's net, in the ledger table


def test_order_export_shows_the_fee_kept_and_the_net_per_order(world, tenant, owner):
    first = world["orders"][0]
    client = Client()
    client.force_login(owner)
    response = client.get(
        reverse(
            "billing_organizer:orders-export",
            kwargs={"tenant_slug": tenant.slug, "event_id": first.event_id, "file_format": "csv"},
        )
    )
    rows = {r["Order"]: r for r in rows_as_dicts(csv_rows(response))}
    assert (rows[str(first.pk)]["Platform fee"], rows[str(first.pk)]["Net"]) == ("2.22", "77.78")
