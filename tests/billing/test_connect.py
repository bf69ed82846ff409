"""Stripe Connect (Express) per organization: onboarding through the real SDK against the local Stripe, the
account's state mirrored from Connect webhooks (their own endpoint and secret, stored once, out-of-order safe),
disconnection, and paid tickets gated on the account taking charges (free ones always sell)."""

import copy
import datetime as dt
import json

import pytest
from django.core.exceptions import ValidationError
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from billing import payments, services
from billing.models import ConnectedAccount, Order, WebhookEvent
from events.models import TicketType
from eventsaas.models import AuditLog
from tenants.models import Role
from tests.billing.conftest import buy, seats
from tests.factories import TicketedEventFactory, TicketTypeFactory, connected_account_for
from tests.support.stripe_fixtures import STRIPE_CONNECT_WEBHOOK_SECRET, STRIPE_WEBHOOK_SECRET
from tests.support.stripe_server import FakeStripe

pytestmark = pytest.mark.django_db

CONNECT_URL = reverse("billing:stripe-connect-webhook")
PLATFORM_URL = reverse("billing:stripe-webhook")
ACCOUNTS = "/v1/accounts"
LINKS = "/v1/account_links"


def payments_url(tenant, name="payments"):
    return reverse(f"billing_organizer:{name}", kwargs={"tenant_slug": tenant.slug})


def start(client, tenant):
    return client.post(payments_url(tenant, "connect-onboarding"))


@pytest.fixture
def connect_hook(client, django_capture_on_commit_callbacks):
    """POST a Connect event to the Connect endpoint (or `url`), signed with `secret`, running the on-commit task."""

    def post(event, *, secret=STRIPE_CONNECT_WEBHOOK_SECRET, url=CONNECT_URL, body=None):
        body = FakeStripe.payload(event) if body is None else body
        with django_capture_on_commit_callbacks(execute=True):
            return client.post(
                url, data=body, content_type="application/json", HTTP_STRIPE_SIGNATURE=FakeStripe.sign(body, secret)
            )

    return post


def unpaid_event(tenant):
    """A ticketed event of `tenant` with a paid and a free type, the organization without a Stripe account."""
    event = TicketedEventFactory(tenant=tenant, connected_account=False)
    paid = TicketTypeFactory(event=event, name="Standard", price=2500, capacity=10, connected_account=False)
    free = TicketTypeFactory(event=event, name="Community", price=0, capacity=10, connected_account=False)
    return event, paid, free


# --- Onboarding -----------------------------------------------------------------------------------------------------


def test_onboarding_creates_one_express_account_and_a_fresh_link_per_click(fake_stripe, tenant, owner_client, owner):
    first = start(owner_client, tenant)

    assert first.status_code == 303
    [created] = fake_stripe.calls("POST", ACCOUNTS)
    assert created.params["type"] == "express"
    assert created.params["capabilities"] == {
        "card_payments": {"requested": "true"},
        "transfers": {"requested": "true"},
    }
    assert created.params["metadata"] == {"tenant_id": str(tenant.pk)}
    assert created.headers["Idempotency-Key"] == f"tenant-{tenant.pk}-connect-account"
    account = ConnectedAccount.objects.get(tenant=tenant)
    assert account.stripe_account_id in fake_stripe.accounts and not account.is_test
    assert (account.charges_enabled, account.payouts_enabled, account.details_submitted) == (False, False, False)
    [link] = fake_stripe.calls("POST", LINKS)
    assert link.params["account"] == account.stripe_account_id
    assert link.params["type"] == "account_onboarding"
    assert link.params["return_url"].endswith(payments_url(tenant, "connect-return"))
    assert link.params["refresh_url"].endswith(payments_url(tenant, "connect-refresh"))
    assert first["Location"] == fake_stripe.account_links[0]["url"]

    # Resuming: the same account, a new one-time link.
    second = start(owner_client, tenant)
    assert second.status_code == 303 and second["Location"] == fake_stripe.account_links[1]["url"]
    assert second["Location"] != first["Location"]
    assert fake_stripe.accounts_created == 1 and ConnectedAccount.objects.count() == 1
    actions = list(AuditLog.objects.filter(tenant_id=tenant.pk).values_list("action", flat=True).order_by("created_at"))
    assert actions.count("connect.account_created") == 1 and actions.count("connect.onboarding_started") == 2


def test_two_owners_starting_at_once_get_one_account(fake_stripe, tenant, owner, monkeypatch):
    """The second owner's click lands while the first is between Stripe's answer and our insert: Stripe's
    idempotency key gives both the same account, and the unique organization keeps one row."""
    real_create = payments.connected_account_create
    calls = []

    def racing_create(**kwargs):
        calls.append(kwargs)
        if len(calls) == 1:
            # The other owner runs the whole start while this one waits for Stripe.
            services.connected_account_ensure(tenant=tenant, acting_user=owner)
        return real_create(**kwargs)

    monkeypatch.setattr(payments, "connected_account_create", racing_create)
    first = services.connected_account_ensure(tenant=tenant, acting_user=owner)

    assert len(calls) == 2  # both reached Stripe
    assert fake_stripe.accounts_created == 1  # one account at Stripe (same idempotency key)
    assert list(ConnectedAccount.objects.values_list("stripe_account_id", flat=True)) == [first.stripe_account_id]
    assert AuditLog.objects.filter(action="connect.account_created").count() == 1


def test_a_stripe_failure_leaves_no_account_and_says_so(fake_stripe, tenant, owner_client, no_backoff):
    fake_stripe.fail_next(1, status=400)

    response = start(owner_client, tenant)

    assert response.status_code == 302 and response["Location"] == payments_url(tenant)
    assert not ConnectedAccount.objects.exists()
    page = owner_client.get(payments_url(tenant)).content.decode()
    assert "Stripe did not answer as expected" in page


def test_return_shows_the_page_and_refresh_makes_a_new_link_for_the_same_account(fake_stripe, tenant, owner_client):
    # Without an account, a refresh address (prefetched, leaked) creates nothing.
    assert owner_client.get(payments_url(tenant, "connect-refresh"))["Location"] == payments_url(tenant)
    assert not fake_stripe.calls("POST") and not ConnectedAccount.objects.exists()

    start(owner_client, tenant)
    refreshed = owner_client.get(payments_url(tenant, "connect-refresh"))
    assert refreshed.status_code == 303 and refreshed["Location"] == fake_stripe.account_links[-1]["url"]
    assert len(fake_stripe.account_links) == 2 and fake_stripe.accounts_created == 1

    back = owner_client.get(payments_url(tenant, "connect-return"), follow=True)
    page = back.content.decode()
    assert back.status_code == 200 and 'data-state="details_missing"' in page
    assert "Welcome back" in page


# --- Connect webhooks: the mirror -------------------------------------------------------------------------------------


@pytest.fixture
def stripe_account(fake_stripe, tenant, owner):
    """`tenant`'s Express account at the fake Stripe, onboarding not finished."""
    return services.connected_account_ensure(tenant=tenant, acting_user=owner)


def test_account_updated_mirrors_the_state_and_a_replay_does_nothing(fake_stripe, stripe_account, connect_hook):
    before = fresh_account(stripe_account)
    assert before.requirements_due == [] and before.synced_at is None
    event = fake_stripe.complete_onboarding(stripe_account.stripe_account_id, payouts=False)
    body = FakeStripe.payload(event)

    assert connect_hook(event, body=body).status_code == 200

    account = fresh_account(stripe_account)
    assert (account.charges_enabled, account.payouts_enabled, account.details_submitted) == (True, False, True)
    assert account.requirements_due == ["external_account"]
    assert (account.country, account.default_currency) == ("US", "usd")
    row = WebhookEvent.objects.get(stripe_event_id=event["id"])
    assert row.status == WebhookEvent.Status.PROCESSED and row.tenant_id == account.tenant_id and row.order_id is None
    audits = AuditLog.objects.filter(action="connect.account_updated").count()

    assert connect_hook(event, body=body).status_code == 200  # Stripe delivering again
    assert WebhookEvent.objects.filter(stripe_event_id=event["id"]).count() == 1
    assert AuditLog.objects.filter(action="connect.account_updated").count() == audits


def test_an_older_event_arriving_late_never_overwrites_a_newer_one(fake_stripe, stripe_account, connect_hook):
    account_id = stripe_account.stripe_account_id
    older = fake_stripe.require_more(account_id, "individual.verification.document")
    newer = fake_stripe.complete_onboarding(account_id)
    older["created"], newer["created"] = 1_900_000_000, 1_900_000_060

    connect_hook(newer)
    connect_hook(older)

    account = fresh_account(stripe_account)
    assert account.charges_enabled and account.payouts_enabled and account.requirements_due == []
    assert int(account.synced_at.timestamp()) == newer["created"]
    # Both were stored and processed; the older one simply lost the compare-and-set.
    assert WebhookEvent.objects.filter(status=WebhookEvent.Status.PROCESSED).count() == 2

    # In order, the newer requirement does take charges away.
    later = fake_stripe.require_more(account_id, "individual.verification.document")
    later["created"] = 1_900_000_120
    connect_hook(later)
    account = fresh_account(stripe_account)
    assert not account.charges_enabled and account.requirements_due == ["individual.verification.document"]
    assert account.disabled_reason == "requirements.past_due"


def test_an_account_that_is_not_ours_is_ignored(fake_stripe, stripe_account, connect_hook):
    event = fake_stripe.complete_onboarding(stripe_account.stripe_account_id)
    stranger = copy.deepcopy(event)
    stranger["id"] += "x"
    stranger["data"]["object"]["id"] = stranger["account"] = "acct_someoneelse1234"

    assert connect_hook(stranger).status_code == 200

    assert WebhookEvent.objects.get(stripe_event_id=stranger["id"]).status == WebhookEvent.Status.IGNORED
    assert not fresh_account(stripe_account).charges_enabled


@pytest.mark.parametrize(
    ("url", "secret"),
    [
        pytest.param(CONNECT_URL, STRIPE_WEBHOOK_SECRET, id="connect-endpoint-platform-secret"),
        pytest.param(PLATFORM_URL, STRIPE_CONNECT_WEBHOOK_SECRET, id="platform-endpoint-connect-secret"),
        pytest.param(CONNECT_URL, "whsec_guessed", id="connect-endpoint-guessed-secret"),
    ],
)
def test_each_endpoint_accepts_only_its_own_secret(fake_stripe, stripe_account, connect_hook, url, secret):
    event = fake_stripe.complete_onboarding(stripe_account.stripe_account_id)

    assert connect_hook(event, secret=secret, url=url).status_code == 400

    assert not WebhookEvent.objects.exists()
    assert not fresh_account(stripe_account).charges_enabled


def test_connect_webhooks_are_refused_while_their_secret_is_not_set(
    fake_stripe, stripe_account, connect_hook, settings
):
    settings.STRIPE_CONNECT_WEBHOOK_SECRET = ""
    event = fake_stripe.complete_onboarding(stripe_account.stripe_account_id)

    assert connect_hook(event, secret="").status_code == 400
    assert not WebhookEvent.objects.exists()


def test_disconnection_stops_charges_and_an_older_update_cannot_bring_them_back(
    fake_stripe, stripe_account, connect_hook, owner_client, tenant
):
    account_id = stripe_account.stripe_account_id
    ready = fake_stripe.complete_onboarding(account_id)
    ready["created"] = 1_900_000_000
    connect_hook(ready)
    deauthorized = fake_stripe.deauthorize(account_id)
    deauthorized["created"] = 1_900_000_100
    late = copy.deepcopy(ready)
    late["id"] += "late"
    late["created"] = 1_900_000_050

    connect_hook(deauthorized)
    connect_hook(late)

    account = fresh_account(stripe_account)
    assert not account.charges_enabled and not account.payouts_enabled and account.deauthorized_at is not None
    assert AuditLog.objects.filter(action="connect.account_disconnected", tenant_id=tenant.pk).count() == 1
    page = owner_client.get(payments_url(tenant)).content.decode()
    assert 'data-state="disconnected"' in page

    # Connecting again makes a new account at Stripe for the same row.
    assert start(owner_client, tenant).status_code == 303
    account = fresh_account(stripe_account)
    assert account.stripe_account_id != account_id and account.stripe_account_id in fake_stripe.accounts
    assert account.deauthorized_at is None and not account.charges_enabled
    assert fake_stripe.accounts_created == 2 and ConnectedAccount.objects.count() == 1


# --- Gating ---------------------------------------------------------------------------------------------------------


def test_paid_tickets_wait_for_the_account_free_ones_sell_and_the_update_opens_sales(
    fake_stripe, tenant, owner, connect_hook
):
    event, paid, free = unpaid_event(tenant)

    with pytest.raises(ValidationError) as refused:
        buy(event, (paid, 1), (free, 1))
    assert "“Standard” is not on sale yet" in " ".join(refused.value.message_dict["items"])
    assert seats(paid) == (0, 0) and seats(free) == (0, 0) and not Order.objects.exists()

    free_order = buy(event, (free, 2))
    # A free order is a registration (holders): paid and sold at once.
    assert free_order.total == 0 and free_order.status == Order.Status.PAID and seats(free) == (2, 0)

    account = services.connected_account_ensure(tenant=tenant, acting_user=owner)
    with pytest.raises(ValidationError):
        buy(event, (paid, 1))  # onboarding started, not finished
    connect_hook(fake_stripe.complete_onboarding(account.stripe_account_id))

    order = buy(event, (paid, 1))
    assert order.total == 2500 and seats(paid) == (0, 1)


def test_a_paid_type_sold_out_when_read_is_answered_sold_out_and_the_account_is_not_read(tenant):
    """A rush's late buyers: seats, not the account, decide the answer, so checkout does not read the account."""
    event, paid, free = unpaid_event(tenant)
    TicketType.objects.filter(pk=paid.pk).update(sold=10)

    with CaptureQueriesContext(connection) as queries, pytest.raises(services.SoldOut) as sold_out:
        buy(event, (paid, 1))

    assert sold_out.value.ticket_types == [paid]
    assert not [q for q in queries if "billing_connectedaccount" in q["sql"]]
    with pytest.raises(ValidationError, match="is not on sale yet"):
        buy(event, (paid, 0), (free, 1), (TicketTypeFactory(event=event, price=900, connected_account=False), 1))


def test_the_shop_shows_paid_tickets_as_not_on_sale_yet_and_still_sells_free_ones(client, tenant):
    event, paid, free = unpaid_event(tenant)
    shop_url = reverse("billing:shop", kwargs={"event_id": event.pk})

    page = client.get(shop_url).content.decode()
    assert 'data-testid="paid-not-on-sale"' in page and "Free tickets can be booked now." in page
    assert page.count('data-testid="not-on-sale-yet"') == 1
    assert f'name="qty_{free.pk}"' in page and f'name="qty_{paid.pk}"' not in page

    # A hand-made POST for the paid type gets the field error, nothing reserved.
    response = client.post(
        shop_url, {f"qty_{paid.pk}": "1", "buyer_name": "Ada", "buyer_email": "ada@example.com", "code": ""}
    )
    assert response.status_code == 400
    assert "is not on sale yet" in response.content.decode()
    assert seats(paid) == (0, 0)

    connected_account_for(tenant)
    page = client.get(shop_url).content.decode()
    assert 'data-testid="paid-not-on-sale"' not in page and f'name="qty_{paid.pk}"' in page


def test_organizer_pages_show_the_banner_until_the_account_takes_charges(tenant, member_client):
    event, _paid, _free = unpaid_event(tenant)
    pages = [
        reverse("events:ticket-types", kwargs={"tenant_slug": tenant.slug, "event_id": event.pk}),
        reverse("events:dashboard", kwargs={"tenant_slug": tenant.slug, "event_id": event.pk}),
    ]
    client = member_client(Role.ADMIN)
    for url in pages:
        page = client.get(url).content.decode()
        assert 'data-testid="payments-notice"' in page and payments_url(tenant) in page

    connected_account_for(tenant)
    for url in pages:
        assert 'data-testid="payments-notice"' not in client.get(url).content.decode()


def test_a_free_only_event_needs_no_account(tenant, client):
    event = TicketedEventFactory(tenant=tenant, connected_account=False)
    free = TicketTypeFactory(event=event, price=0, connected_account=False)

    order = buy(event, (free, 1))

    assert order.total == 0 and not ConnectedAccount.objects.exists()
    page = client.get(reverse("billing:shop", kwargs={"event_id": event.pk})).content.decode()
    assert 'data-testid="paid-not-on-sale"' not in page


# --- The Payments page ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("role", "status"), [(Role.OWNER, 200), (Role.ADMIN, 200), (Role.VIEWER, 403), (Role.DOOR, 403)]
)
def test_the_payments_page_is_for_owners_and_admins(tenant, member_client, role, status):
    client = member_client(role)

    response = client.get(payments_url(tenant))

    assert response.status_code == status
    nav = client.get(reverse("events:list", kwargs={"tenant_slug": tenant.slug})).content.decode()
    assert (payments_url(tenant) in nav) == (status == 200)


@pytest.mark.parametrize(
    ("fields", "state", "shown"),
    [
        (None, "none", "Not connected."),
        (
            {"charges_enabled": False, "payouts_enabled": False, "requirements_due": ["external_account"]},
            "details_missing",
            "external_account",
        ),
        ({"charges_enabled": True, "payouts_enabled": False}, "charges", "Can take charges."),
        ({}, "payouts", "Ready: charges and payouts enabled."),
    ],
)
def test_the_payments_page_shows_the_account_state(tenant, owner_client, fields, state, shown):
    if fields is not None:
        connected_account_for(tenant, **fields)

    page = owner_client.get(payments_url(tenant)).content.decode()

    assert f'data-state="{state}"' in page and shown in page
    assert 'data-testid="onboarding"' in page


def test_the_payments_page_says_when_stripe_last_wrote_with_its_zone(tenant, owner_client):
    account = connected_account_for(tenant)
    ConnectedAccount.objects.filter(pk=account.pk).update(synced_at=dt.datetime(2026, 12, 5, 16, 32, tzinfo=dt.UTC))

    page = owner_client.get(payments_url(tenant)).content.decode()

    assert "Last update from Stripe: Sat 5 Dec 2026, 16:32 UTC" in page


# --- Test-payment mode: simulated onboarding --------------------------------------------------------------------------


def test_simulated_onboarding_completes_through_the_connect_webhook_path(
    tenant, owner_client, django_capture_on_commit_callbacks
):
    assert payments.payment_mode() == "test"
    event, paid, _free = unpaid_event(tenant)

    response = start(owner_client, tenant)
    account = ConnectedAccount.objects.get(tenant=tenant)
    assert response.status_code == 303 and response["Location"] == payments_url(tenant, "connect-simulated")
    assert account.is_test and account.stripe_account_id.startswith("acct_localtest_")
    page = owner_client.get(response["Location"]).content.decode()
    assert 'data-testid="test-mode"' in page and "Simulated onboarding" in page

    with django_capture_on_commit_callbacks(execute=True):
        done = owner_client.post(payments_url(tenant, "connect-simulated"), {"action": "complete"})

    assert done.status_code == 302
    account = fresh_account(account)
    assert account.charges_enabled and account.payouts_enabled and account.details_submitted
    row = WebhookEvent.objects.get(type="account.updated")
    assert row.is_test and row.payload["account"] == account.stripe_account_id
    assert buy(event, (paid, 1)).total == paid.price


def test_a_simulated_event_is_signed_with_the_connect_secret_only(tenant, owner, client):
    account = services.connected_account_ensure(tenant=tenant, acting_user=owner)
    payload, signature = payments.simulated_account_event(account=account)

    # The platform endpoint refuses it; the Connect endpoint takes it.
    assert (
        client.post(PLATFORM_URL, payload, content_type="application/json", HTTP_STRIPE_SIGNATURE=signature).status_code
        == 400
    )
    assert (
        client.post(CONNECT_URL, payload, content_type="application/json", HTTP_STRIPE_SIGNATURE=signature).status_code
        == 200
    )
    assert json.loads(payload)["account"] == account.stripe_account_id


def test_simulated_onboarding_does_not_exist_outside_test_mode(fake_stripe, tenant, owner_client, owner):
    # even a simulated row left from test mode
    connected_account_for(tenant, charges_enabled=False, is_test=True, stripe_account_id="acct_localtest_left")

    assert owner_client.get(payments_url(tenant, "connect-simulated")).status_code == 404
    response = owner_client.post(payments_url(tenant, "connect-simulated"), {"action": "complete"})
    assert response.status_code == 404
    assert not fresh_account(ConnectedAccount.objects.get(tenant=tenant)).charges_enabled
    with pytest.raises(RuntimeError):
        payments.simulated_account_event(account=ConnectedAccount.objects.get(tenant=tenant))


def test_the_simulated_page_needs_an_account_of_its_own(tenant, owner_client):
    assert owner_client.get(payments_url(tenant, "connect-simulated")).status_code == 404


def fresh_account(account: ConnectedAccount) -> ConnectedAccount:
    account.refresh_from_db()
    return account


def test_a_simulated_account_left_from_test_mode_takes_no_charges_with_real_keys(fake_stripe, tenant, owner_client):
    """A demo database switched to real Stripe keys: its simulated account (charges enabled in test mode) is
    unknown to Stripe, so paid tickets wait for a real account instead of sending Stripe a made-up destination."""
    event, paid, free = unpaid_event(tenant)
    simulated = connected_account_for(tenant, is_test=True, stripe_account_id="acct_localtest_demo")

    with pytest.raises(ValidationError) as refused:
        buy(event, (paid, 1))
    assert "is not on sale yet" in str(refused.value)
    assert seats(paid) == (0, 0) and buy(event, (free, 1)).status == Order.Status.PAID
    page = owner_client.get(payments_url(tenant)).content.decode()
    assert 'data-state="simulated"' in page and "Connect a real Stripe account" in page

    # Connecting replaces it with a real account at Stripe (the same row: one account per organization).
    assert start(owner_client, tenant).status_code == 303
    account = fresh_account(simulated)
    assert not account.is_test and account.stripe_account_id in fake_stripe.accounts
    assert not account.charges_enabled and fake_stripe.accounts_created == 1
    assert ConnectedAccount.objects.filter(tenant=tenant).count() == 1
