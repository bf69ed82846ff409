"""Owners starting onboarding at the same moment, with real parallel connections (see test_concurrency.py):
one Stripe account and one row per organization. The control run gives every click its own idempotency key
and shows the race is real: Stripe then makes several accounts, of which the unique row keeps one."""

import pytest

from billing import payments, services
from billing.models import ConnectedAccount
from tenants.models import Role
from tests.billing.test_concurrency import run_together
from tests.factories import MembershipFactory
from tests.support import stripe_fixtures

pytestmark = pytest.mark.django_db(transaction=True)
fake_stripe = stripe_fixtures.fake_stripe

OWNERS = 6


def start_all(tenant):
    owners = [MembershipFactory(tenant=tenant, role=Role.OWNER).user for _ in range(OWNERS)]
    calls = [
        (lambda user=user: services.connect_onboarding_start(tenant=tenant, acting_user=user, site_url="http://x.test"))
        for user in owners
    ]
    return run_together(calls)


def test_owners_starting_at_once_get_one_account(fake_stripe, tenant):
    outcomes = start_all(tenant)

    assert [o.error for o in outcomes] == [None] * OWNERS
    [account] = ConnectedAccount.objects.filter(tenant=tenant)
    assert fake_stripe.accounts_created == 1 and list(fake_stripe.accounts) == [account.stripe_account_id]
    # Every owner got a link, all for that one account.
    assert {link["account"] for link in fake_stripe.account_links} == {account.stripe_account_id}
    assert len(fake_stripe.account_links) == OWNERS


def test_control_without_the_idempotency_key_stripe_makes_several_accounts(fake_stripe, tenant, monkeypatch):
    real_call = payments._call
    clicks = iter(range(1000))

    def call_with_a_key_per_click(operation, *args, **kwargs):
        if kwargs.get("options", {}).get("idempotency_key", "").startswith("tenant-"):
            kwargs["options"] = {"idempotency_key": f"click-{next(clicks)}"}
        return real_call(operation, *args, **kwargs)

    monkeypatch.setattr(payments, "_call", call_with_a_key_per_click)
    outcomes = start_all(tenant)

    assert [o.error for o in outcomes] == [None] * OWNERS
    assert ConnectedAccount.objects.filter(tenant=tenant).count() == 1  # the unique organization still holds
    assert fake_stripe.accounts_created > 1  # but Stripe was left with orphans: the key is what prevents them
