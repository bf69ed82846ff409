"""A ticketed event's downloads: orders (tickets, amounts, refunds) and tickets with their check-ins, CSV and Excel.

Orders are bought as buyers buy them (checkout, then the test-payment webhook); each file is opened with the
csv module or openpyxl and read cell by cell.
"""

import datetime as dt
from decimal import Decimal

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from billing import services
from billing.models import LedgerEntry, Order, Ticket
from billing.services import CheckoutItem, CheckoutRequest
from tenants.models import Role
from tests.factories import TenantFactory, TicketedEventFactory, TicketTypeFactory
from tests.support.spreadsheets import csv_rows, rows_as_dicts, xlsx_rows, xlsx_sheet

# 20:15 UTC on 1 June 2026 is 05:15 the next day in Tokyo: the date moves with the zone.
CHECKED_IN_UTC = dt.datetime(2026, 6, 1, 20, 15, tzinfo=dt.UTC)
CHECKED_IN_IN_TOKYO = dt.datetime(2026, 6, 2, 5, 15)  # noqa: DTZ001  (a spreadsheet cell has no zone)


def _url(name, event, file_format):
    return reverse(name, kwargs={"tenant_slug": event.tenant.slug, "event_id": event.pk, "file_format": file_format})


@pytest.fixture
def buy(django_capture_on_commit_callbacks):
    """buy(event, (type, n), ..., pay=True): an order as the shop makes it, paid through the test webhook."""

    def buy(event, *items, buyer="Ann Lee", email="ann@example.com", pay=True, names=()):
        with django_capture_on_commit_callbacks(execute=True):
            order = services.checkout_start(
                event=event,
                request=CheckoutRequest(
                    items=[CheckoutItem(ticket_type_id=str(t.pk), quantity=n) for t, n in items],
                    buyer_name=buyer,
                    buyer_email=email,
                    attendee_names=list(names),
                ),
            )
            if pay:
                services.order_simulate_payment(order=order)
        order.refresh_from_db()
        return order

    return buy


@pytest.fixture
def concert(tenant):
    """Sells in yen, a currency without decimals, in Tokyo."""
    return TicketedEventFactory(tenant=tenant, name="Spring concert", slug="spring-concert", timezone="Asia/Tokyo")


@pytest.fixture
def seats(concert):
    general = TicketTypeFactory(event=concert, name="General", price=2500, currency="jpy", capacity=50, position=1)
    vip = TicketTypeFactory(event=concert, name="VIP", price=8000, currency="jpy", capacity=5, position=2)
    return general, vip


@pytest.mark.parametrize("file_format", ["csv", "xlsx"])
def test_order_export_has_amounts_in_major_units_tickets_and_refunds(
    owner_client, owner, concert, seats, buy, file_format
):
    general, vip = seats
    order = buy(concert, (general, 2), (vip, 1), buyer="Zoë Ñúñez", names=["Zoë Ñúñez", "Bo Chen", ""])
    services.order_refund(order=order, acting_user=owner, amount=2500)
    pending = buy(concert, (general, 1), buyer="Pat Pending", email="pat@example.com", pay=False)
    Order.objects.filter(pk=order.pk).update(created_at=pending.created_at - dt.timedelta(hours=1))
    refund = LedgerEntry.objects.get(order_id=order.pk, kind=LedgerEntry.Kind.REFUND)
    LedgerEntry.objects.filter(pk=refund.pk).update(created_at=CHECKED_IN_UTC)

    response = owner_client.get(_url("billing_organizer:orders-export", concert, file_format))

    assert response.status_code == 200
    assert "spring-concert-orders-" in response["Content-Disposition"]
    rows = csv_rows(response) if file_format == "csv" else xlsx_rows(response)
    assert rows[0] == [
        "Order",
        "Ordered at (Asia/Tokyo)",
        "Buyer",
        "Buyer email",
        "Status",
        "Test payment",
        "Tickets",
        "Ticket types",
        "Ticket holders",
        "Currency",
        "Total",
        "Paid",
        "Refunded",
        "Platform fee",
        "Net",
        "Paid at (Asia/Tokyo)",
        "Last refund at (Asia/Tokyo)",
        "Stripe payment",
    ]
    newest, older = rows_as_dicts(rows)  # newest first, as the page lists them
    assert (newest["Buyer"], newest["Status"]) == ("Pat Pending", "Awaiting payment")
    assert older["Order"] == str(order.pk)
    assert (older["Buyer"], older["Status"], older["Test payment"]) == ("Zoë Ñúñez", "Partially refunded", "Yes")
    assert older["Ticket types"] == "2 × General; 1 × VIP"
    assert older["Ticket holders"] == "Zoë Ñúñez; Bo Chen"
    assert older["Currency"] == "JPY"
    if file_format == "csv":
        assert (older["Tickets"], older["Total"], older["Paid"], older["Refunded"]) == ("3", "13000", "13000", "2500")
        # The default 2.5 %: 325 yen taken, 63 given back with the 2500 refund (cumulative, half up).
        assert (older["Platform fee"], older["Net"]) == ("262", "10238")
        assert older["Last refund at (Asia/Tokyo)"] == "2026-06-02 05:15"
        assert newest["Paid"] == "0" and newest["Paid at (Asia/Tokyo)"] == ""
    else:
        assert (older["Tickets"], older["Total"], older["Paid"], older["Refunded"]) == (3, 13000, 13000, 2500)
        assert older["Last refund at (Asia/Tokyo)"] == CHECKED_IN_IN_TOKYO
        assert isinstance(older["Paid at (Asia/Tokyo)"], dt.datetime)


def test_amounts_of_a_currency_with_cents_are_exact_decimals(owner_client, tenant, buy):
    gala = TicketedEventFactory(tenant=tenant)
    seat = TicketTypeFactory(event=gala, name="Seat", price=1999, currency="eur")
    buy(gala, (seat, 3))

    csv_order = rows_as_dicts(csv_rows(owner_client.get(_url("billing_organizer:orders-export", gala, "csv"))))[0]
    sheet = xlsx_sheet(owner_client.get(_url("billing_organizer:orders-export", gala, "xlsx")))

    assert (csv_order["Total"], csv_order["Currency"]) == ("59.97", "EUR")
    total = sheet.cell(row=2, column=11)
    assert (Decimal(str(total.value)), total.number_format) == (Decimal("59.97"), "0.00")


def test_order_export_keeps_the_page_status_filter(owner_client, concert, seats, buy):
    general, _ = seats
    buy(concert, (general, 1), buyer="Paid Buyer")
    buy(concert, (general, 1), buyer="Pending Buyer", pay=False)

    paid = rows_as_dicts(
        csv_rows(owner_client.get(_url("billing_organizer:orders-export", concert, "csv") + "?status=paid"))
    )
    page = owner_client.get(
        reverse("billing_organizer:orders", kwargs={"tenant_slug": concert.tenant.slug, "event_id": concert.pk}),
        {"status": "paid"},
    ).content.decode()

    assert [row["Buyer"] for row in paid] == ["Paid Buyer"]
    assert f'href="{_url("billing_organizer:orders-export", concert, "xlsx")}?status=paid"' in page


@pytest.mark.parametrize("file_format", ["csv", "xlsx"])
def test_check_in_export_lists_every_ticket_with_its_check_in(owner_client, owner, concert, seats, buy, file_format):
    general, vip = seats
    order = buy(concert, (general, 1), (vip, 1), buyer='=HYPERLINK("http://evil.example")', names=["-1", "@SUM(A1)"])
    first, second = Ticket.objects.filter(order_id=order.pk).order_by("seat")
    services.ticket_check_in(event=concert, code=first.code, acting_user=owner)
    Ticket.objects.filter(pk=first.pk).update(checked_in_at=CHECKED_IN_UTC)

    response = owner_client.get(_url("billing_organizer:check-in-export", concert, file_format))

    assert response.status_code == 200
    if file_format == "xlsx":
        assert all(cell.data_type != "f" for row in xlsx_sheet(response).iter_rows() for cell in row)
    rows = csv_rows(response) if file_format == "csv" else xlsx_rows(response)
    assert rows[0] == [
        "Ticket code",
        "Order",
        "Ticket type",
        "Seat",
        "Holder",
        "Buyer",
        "Buyer email",
        "Status",
        "Currency",
        "Price",
        "Checked in at (Asia/Tokyo)",
        "Checked in by",
    ]
    checked, waiting = rows_as_dicts(rows)
    assert (checked["Ticket code"], waiting["Ticket code"]) == (first.display_code, second.display_code)
    assert (checked["Holder"], waiting["Holder"]) == ("'-1", "'@SUM(A1)")
    assert checked["Buyer"] == '\'=HYPERLINK("http://evil.example")'
    assert (checked["Ticket type"], checked["Status"], checked["Currency"]) == ("General", "Valid", "JPY")
    assert checked["Checked in by"] == owner.email
    if file_format == "csv":
        assert (checked["Seat"], checked["Price"], waiting["Price"]) == ("1", "2500", "8000")
        assert checked["Checked in at (Asia/Tokyo)"] == "2026-06-02 05:15"
        assert (waiting["Checked in at (Asia/Tokyo)"], waiting["Checked in by"]) == ("", "")
    else:
        assert (checked["Seat"], checked["Price"], waiting["Price"]) == (1, 2500, 8000)
        assert checked["Checked in at (Asia/Tokyo)"] == CHECKED_IN_IN_TOKYO
        assert waiting["Checked in at (Asia/Tokyo)"] is None


@pytest.mark.parametrize("role", [Role.VIEWER, Role.DOOR])
def test_viewers_and_door_staff_export_tickets_without_their_codes(member_client, concert, seats, buy, role):
    general, _ = seats
    order = buy(concert, (general, 2))
    codes = [t.code for t in Ticket.objects.filter(order_id=order.pk)]

    response = member_client(role).get(_url("billing_organizer:check-in-export", concert, "csv"))
    orders = member_client(role).get(_url("billing_organizer:orders-export", concert, "csv"))

    assert response.status_code == orders.status_code == 200
    rows = csv_rows(response)
    assert "Ticket code" not in rows[0] and len(rows) == 3
    text = "".join(",".join(row) for row in rows + csv_rows(orders)).replace("-", "")
    assert not any(code in text for code in codes)


def test_exports_cost_the_same_queries_for_more_orders(owner_client, concert, seats, buy):
    general, _ = seats
    owner_client.get(_url("billing_organizer:orders-export", concert, "csv")).getvalue()  # the session's first request

    def queries(orders: int) -> tuple[int, int]:
        for n in range(orders):
            buy(concert, (general, 1 + n % 2), pay=bool(n % 3))
        counts = []
        for name in ("billing_organizer:orders-export", "billing_organizer:check-in-export"):
            with CaptureQueriesContext(connection) as captured:
                owner_client.get(_url(name, concert, "xlsx")).getvalue()
            counts.append(len(captured))
        return tuple(counts)

    assert queries(2) == queries(12)


def test_another_organizations_event_is_a_404(owner_client, buy):
    theirs = TicketedEventFactory(tenant=TenantFactory())
    buy(theirs, (TicketTypeFactory(event=theirs), 1))

    for name in ("billing_organizer:orders-export", "billing_organizer:check-in-export"):
        assert owner_client.get(_url(name, theirs, "csv")).status_code == 404


def test_an_invite_only_event_has_no_order_export(owner_client, event):
    assert owner_client.get(_url("billing_organizer:orders-export", event, "csv")).status_code == 404


def test_the_check_in_page_links_its_exports(owner_client, concert):
    page = owner_client.get(
        reverse("billing_organizer:check-in", kwargs={"tenant_slug": concert.tenant.slug, "event_id": concert.pk})
    ).content.decode()

    assert _url("billing_organizer:check-in-export", concert, "csv") in page
    assert _url("billing_organizer:check-in-export", concert, "xlsx") in page
