"""The staff admin of ticketed events: every page loads, and nothing in it can move money, seats or states."""

import pytest
from django.contrib.admin.models import DELETION, LogEntry
from django.contrib.admin.sites import site
from django.contrib.auth.models import Permission
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from billing import services
from billing.models import ConnectedAccount, LedgerEntry, Order, Ticket, WebhookEvent
from billing.services import CheckoutItem, CheckoutRequest
from events.models import TicketType
from eventsaas.models import AuditLog
from tests.factories import TicketedEventFactory, TicketTypeFactory, UserFactory


@pytest.fixture
def staff_client(client, db):
    client.force_login(UserFactory(is_staff=True, is_superuser=True))
    return client


@pytest.fixture
def general(tenant):
    return TicketTypeFactory(event=TicketedEventFactory(tenant=tenant), name="General", price=2500, capacity=10)


def _pending_order(general, quantity, *, name="Ann Lee", email="ann@example.com"):
    """An order for `quantity` General tickets, checked out and not paid yet."""
    return services.checkout_start(
        event=general.event,
        request=CheckoutRequest(
            items=[CheckoutItem(ticket_type_id=str(general.pk), quantity=quantity)],
            buyer_name=name,
            buyer_email=email,
        ),
    )


@pytest.fixture
def paid_order(general, django_capture_on_commit_callbacks):
    """Two General tickets, paid through the test-payment webhook, one refunded: every billing row exists."""
    with django_capture_on_commit_callbacks(execute=True):
        order = _pending_order(general, 2)
        services.order_simulate_payment(order=order)
    order.refresh_from_db()
    return services.order_refund(order=order, acting_user=None, amount=2500)


def _admin_url(model, action="changelist", *args):
    return reverse(f"admin:{model._meta.app_label}_{model._meta.model_name}_{action}", args=args)


@pytest.mark.parametrize("model", [Order, Ticket, LedgerEntry, WebhookEvent, TicketType])
def test_changelist_and_change_pages_load_for_staff(staff_client, paid_order, model):
    obj = model.objects.first()

    changelist = staff_client.get(_admin_url(model))
    change = staff_client.get(_admin_url(model, "change", obj.pk))

    assert changelist.status_code == 200
    assert changelist.context["cl"].result_count == model.objects.count() > 0
    assert change.status_code == 200


def test_order_search_finds_buyers_and_stripe_ids(staff_client, paid_order):
    for term in ("ann@example.com", "Ann Lee", paid_order.stripe_payment_intent_id, str(paid_order.pk)):
        response = staff_client.get(_admin_url(Order), {"q": term})
        assert list(response.context["cl"].result_list) == [paid_order], term
    assert staff_client.get(_admin_url(Order), {"q": "nobody@example.com"}).context["cl"].result_count == 0


def test_ledger_and_webhook_events_are_found_by_stripe_id_buyer_or_order(staff_client, paid_order):
    refund = LedgerEntry.objects.get(order_id=paid_order.pk, kind=LedgerEntry.Kind.REFUND)

    by_refund_id = staff_client.get(_admin_url(LedgerEntry), {"q": refund.stripe_object_id}).context["cl"]
    by_buyer = staff_client.get(_admin_url(LedgerEntry), {"q": "ann@example.com"}).context["cl"]
    events = staff_client.get(_admin_url(WebhookEvent), {"q": str(paid_order.pk)}).context["cl"]

    assert list(by_refund_id.result_list) == [refund]
    assert by_buyer.result_count == 2
    assert [e.order_id for e in events.result_list] == [paid_order.pk]


def test_order_list_shows_the_total_formatted(staff_client, paid_order):
    assert "€50.00" in staff_client.get(_admin_url(Order)).content.decode()


def test_order_money_and_status_cannot_be_edited_in_the_admin(staff_client, paid_order):
    form = staff_client.get(_admin_url(Order, "change", paid_order.pk)).context["adminform"].form
    assert set(form.fields) == {"buyer_name", "buyer_email", "dietary"}

    response = staff_client.post(
        _admin_url(Order, "change", paid_order.pk),
        {
            "buyer_name": "Ann Lee-Smith",
            "buyer_email": "ann@example.com",
            "dietary": "",
            "total": "1",
            "paid_amount": "999999",
            "status": Order.Status.REFUNDED,
            # The read-only inlines still send their management forms.
            "tickets-TOTAL_FORMS": "2",
            "tickets-INITIAL_FORMS": "2",
            "ledger-TOTAL_FORMS": "2",
            "ledger-INITIAL_FORMS": "2",
        },
    )

    assert response.status_code == 302
    fresh = Order.objects.get(pk=paid_order.pk)
    assert fresh.buyer_name == "Ann Lee-Smith"
    assert (fresh.total, fresh.paid_amount, fresh.refunded_amount, fresh.status) == (
        5000,
        5000,
        2500,
        Order.Status.PARTIALLY_REFUNDED,
    )


def test_orders_cannot_be_added_or_deleted_in_the_admin(staff_client, paid_order):
    assert staff_client.get(_admin_url(Order, "add")).status_code == 403
    assert staff_client.post(_admin_url(Order, "delete", paid_order.pk), {"post": "yes"}).status_code == 403
    assert Order.objects.filter(pk=paid_order.pk).exists()


def test_ledger_admin_offers_no_add_change_or_delete(staff_client, paid_order):
    entry = LedgerEntry.objects.filter(order_id=paid_order.pk).first()
    changelist = staff_client.get(_admin_url(LedgerEntry))

    assert _admin_url(LedgerEntry, "add") not in changelist.content.decode()
    assert "delete_selected" not in changelist.content.decode()
    assert staff_client.get(_admin_url(LedgerEntry, "add")).status_code == 403
    assert staff_client.post(_admin_url(LedgerEntry, "delete", entry.pk), {"post": "yes"}).status_code == 403
    staff_client.post(_admin_url(LedgerEntry, "change", entry.pk), {"amount": "1", "kind": "refund"})
    fresh = LedgerEntry.objects.get(pk=entry.pk)
    assert (fresh.kind, fresh.amount) == (entry.kind, entry.amount)
    assert LedgerEntry.objects.filter(order_id=paid_order.pk).count() == 2


def test_ledger_admin_permissions_are_read_only():
    admin = site._registry[LedgerEntry]
    request = type("Request", (), {"user": UserFactory.build(is_staff=True, is_superuser=True)})()

    assert admin.has_view_permission(request) is True
    assert (admin.has_add_permission(request), admin.has_change_permission(request)) == (False, False)
    assert admin.has_delete_permission(request) is False


def test_ticket_search_accepts_the_printed_code_in_any_case(staff_client, paid_order):
    ticket = Ticket.objects.filter(order_id=paid_order.pk).order_by("seat").first()

    response = staff_client.get(_admin_url(Ticket), {"q": ticket.display_code.lower()})

    assert list(response.context["cl"].result_list) == [ticket]


def test_ticket_status_and_check_in_are_read_only(staff_client, paid_order):
    ticket = Ticket.objects.filter(order_id=paid_order.pk, status=Ticket.Status.VALID).get()
    form = staff_client.get(_admin_url(Ticket, "change", ticket.pk)).context["adminform"].form

    assert set(form.fields) == {"attendee_name"}


def test_webhook_event_process_again_runs_a_failed_event(staff_client, general, django_capture_on_commit_callbacks):
    order = services.checkout_start(
        event=general.event,
        request=CheckoutRequest(
            items=[CheckoutItem(ticket_type_id=str(general.pk), quantity=1)],
            buyer_name="Bo Chen",
            buyer_email="bo@example.com",
        ),
    )
    # Stored but never processed (its task was lost), then marked failed as a worker would.
    row = services.order_simulate_payment(order=order)
    WebhookEvent.objects.filter(pk=row.pk).update(status=WebhookEvent.Status.FAILED, error="boom")
    done = WebhookEvent.objects.create(stripe_event_id="evt_done", type="charge.refunded", payload={}, status="ignored")

    with django_capture_on_commit_callbacks(execute=True):
        response = staff_client.post(
            _admin_url(WebhookEvent),
            {"action": "process_again", "_selected_action": [str(row.pk), str(done.pk)]},
            follow=True,
        )

    assert response.status_code == 200
    page = response.content.decode()
    assert "1 event queued for processing." in page
    assert "1 event was already processed or ignored and was left alone." in page
    row.refresh_from_db()
    assert (row.status, row.error) == (WebhookEvent.Status.PROCESSED, "")
    assert Order.objects.get(pk=order.pk).status == Order.Status.PAID
    assert Ticket.objects.filter(order_id=order.pk).count() == 1


def test_webhook_events_cannot_be_added_edited_or_deleted(staff_client, paid_order):
    row = WebhookEvent.objects.first()

    assert staff_client.get(_admin_url(WebhookEvent, "add")).status_code == 403
    assert staff_client.post(_admin_url(WebhookEvent, "delete", row.pk), {"post": "yes"}).status_code == 403
    assert WebhookEvent.objects.filter(pk=row.pk).exists()


def test_process_again_needs_the_change_permission(db):
    admin = site._registry[WebhookEvent]
    request = type("Request", (), {"user": UserFactory(is_staff=True)})()  # staff without permissions

    assert admin.has_process_permission(request) is False


# --- ticket types ---------------------------------------------------------------------------------------


def _ticket_type_form(ticket_type, **overrides):
    data = {
        "name": ticket_type.name,
        "description": "",
        "price": str(ticket_type.price),
        "currency": ticket_type.currency,
        "capacity": str(ticket_type.capacity),
        "sales_start_0": "",
        "sales_start_1": "",
        "sales_end_0": "",
        "sales_end_1": "",
        "max_per_order": "10",
        "access_code": "",
        "is_active": "on",
        "position": "0",
    }
    data.update(overrides)
    return data


def test_ticket_type_sold_and_reserved_are_read_only(staff_client, paid_order, general):
    general.refresh_from_db()
    form = staff_client.get(_admin_url(TicketType, "change", general.pk)).context["adminform"].form

    assert "sold" not in form.fields and "reserved" not in form.fields
    response = staff_client.post(
        _admin_url(TicketType, "change", general.pk), _ticket_type_form(general, capacity="12", sold="0", reserved="9")
    )

    assert response.status_code == 302
    fresh = TicketType.objects.get(pk=general.pk)
    assert (fresh.capacity, fresh.sold, fresh.reserved) == (12, general.sold, general.reserved)
    assert AuditLog.objects.filter(action="ticket_type.updated", object_id=general.pk).exists()


def test_ticket_type_capacity_below_sold_is_refused_in_the_admin(staff_client, paid_order, general):
    general.refresh_from_db()
    assert general.sold == 1

    response = staff_client.post(_admin_url(TicketType, "change", general.pk), _ticket_type_form(general, capacity="0"))

    assert response.status_code == 200
    assert response.context["adminform"].form.errors
    assert TicketType.objects.get(pk=general.pk).capacity == 10


def test_ticket_type_added_in_the_admin_goes_through_the_service(staff_client, general):
    data = _ticket_type_form(general, name="Balcony", price="1500")
    data["event"] = str(general.event_id)

    response = staff_client.post(_admin_url(TicketType, "add"), data)

    assert response.status_code == 302
    created = TicketType.objects.get(event=general.event, name="Balcony")
    assert (created.tenant_id, created.price) == (general.tenant_id, 1500)
    assert AuditLog.objects.filter(action="ticket_type.created", object_id=created.pk).exists()


def test_connected_accounts_are_found_by_organization_or_account_id_and_read_only(staff_client, general):
    account = ConnectedAccount.objects.get(tenant=general.tenant)
    url = _admin_url(ConnectedAccount)
    for query in (account.stripe_account_id, general.tenant.name, general.tenant.slug):
        listed = staff_client.get(url, {"q": query})
        assert listed.status_code == 200 and account.stripe_account_id in listed.content.decode()
    assert account.stripe_account_id not in staff_client.get(url, {"q": "acct_nobody"}).content.decode()

    page = staff_client.get(_admin_url(ConnectedAccount, "change", account.pk))
    assert page.status_code == 200 and 'name="charges_enabled"' not in page.content.decode()
    staff_client.post(_admin_url(ConnectedAccount, "change", account.pk), {"charges_enabled": ""})
    assert staff_client.get(_admin_url(ConnectedAccount, "add")).status_code == 403
    assert staff_client.post(_admin_url(ConnectedAccount, "delete", account.pk), {"post": "yes"}).status_code == 403
    account.refresh_from_db()
    assert account.charges_enabled


def _paid_order(general, quantity, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        order = _pending_order(general, quantity, name="Cy Dee", email="cy@example.com")
        services.order_simulate_payment(order=order)
    return order


def test_order_page_costs_the_same_queries_for_one_ticket_or_many(
    staff_client, general, django_capture_on_commit_callbacks, django_assert_max_num_queries
):
    one = _paid_order(general, 1, django_capture_on_commit_callbacks)
    many = _paid_order(general, 6, django_capture_on_commit_callbacks)
    with CaptureQueriesContext(connection) as baseline:
        assert staff_client.get(_admin_url(Order, "change", one.pk)).status_code == 200

    with django_assert_max_num_queries(len(baseline)):
        assert staff_client.get(_admin_url(Order, "change", many.pk)).status_code == 200


@pytest.mark.parametrize("model", [Order, Ticket, LedgerEntry])
def test_money_lists_show_the_organization(staff_client, general, paid_order, model):
    general.event.tenant.name = "Acme Concerts"
    general.event.tenant.save(update_fields=["name"])

    response = staff_client.get(_admin_url(model))

    assert response.status_code == 200
    assert "Acme Concerts" in response.content.decode()


def _staff_with_every_model_permission():
    """A staff account holding every model permission, deletes included: what stops it must be the admin itself."""
    user = UserFactory(is_staff=True)
    user.user_permissions.set(Permission.objects.all())
    return user


def _refused(response) -> bool:
    """Django admin refuses a delete either with 403 (a related row the user may not delete: orders, tickets,
    ledger) or by showing the "Cannot delete" page again (a protected row: tickets protect their ticket type)."""
    return response.status_code == 403 or (
        response.status_code == 200 and bool(response.context["perms_lacking"] or response.context["protected"])
    )


@pytest.mark.parametrize("is_superuser", [False, True], ids=["staff", "superuser"])
@pytest.mark.parametrize("owner", ["event", "tenant"])
@pytest.mark.parametrize("paid", [True, False], ids=["paid", "pending"])
def test_an_event_or_organization_with_orders_cannot_be_deleted_in_the_admin(
    client, general, django_capture_on_commit_callbacks, owner, is_superuser, paid
):
    if paid:
        order = _paid_order(general, 2, django_capture_on_commit_callbacks)
    else:  # no tickets yet, so nothing is protected: the order admin's missing delete permission refuses alone
        order = _pending_order(general, 1)
    user = UserFactory(is_staff=True, is_superuser=True) if is_superuser else _staff_with_every_model_permission()
    client.force_login(user)
    target = order.event if owner == "event" else order.event.tenant
    url = _admin_url(type(target), "delete", target.pk)
    changelist = _admin_url(type(target))

    page = client.get(url)
    confirmed = client.post(url, {"post": "yes"})
    bulk = client.post(changelist, {"action": "delete_selected", "_selected_action": [str(target.pk)], "post": "yes"})

    assert page.status_code == 200
    assert "Cannot delete" in page.content.decode()
    assert "order" in {str(name) for name in page.context["perms_lacking"]}
    assert _refused(confirmed)
    assert _refused(bulk)
    assert type(target).objects.filter(pk=target.pk).exists()
    assert Order.objects.filter(pk=order.pk).exists()
    assert Ticket.objects.filter(order_id=order.pk).count() == (2 if paid else 0)
    assert LedgerEntry.objects.filter(order_id=order.pk).exists() == paid
    assert not LogEntry.objects.filter(action_flag=DELETION).exists()
