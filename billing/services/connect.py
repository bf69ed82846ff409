"""Stripe Connect (Express): each organization's own account, its onboarding and its mirrored state.

One account per organization: the unique constraint on ConnectedAccount.tenant decides when two owners start
onboarding at once, and Stripe's idempotency key (one per organization) makes both clicks one Stripe account.
The state is a mirror of Connect's `account.updated` events, applied as a compare-and-set on the event's
`created` time, so an older event arriving late never overwrites a newer one.
"""

import datetime
import logging
from typing import Any

from django.db import IntegrityError
from django.db.models import Q
from django.urls import reverse
from django.utils import timezone

from billing import payments
from billing.models import ConnectedAccount
from eventsaas.services import audit_log_record
from tenants.models import ActingUser, Tenant

logger = logging.getLogger(__name__)


def connected_account_ensure(*, tenant: Tenant, acting_user: ActingUser) -> ConnectedAccount:
    """The organization's connected account, created at Stripe (or simulated) on first call.

    Exactly one per organization however many start at once: Stripe answers the same idempotency key with
    the same account, and the unique tenant decides which insert stands. An account the organization
    disconnected is replaced by a new one (compare-and-set on the old id).
    """
    account = ConnectedAccount.objects.for_tenant(tenant).first()
    if account is not None and account.is_usable:
        return account
    replacing = account.stripe_account_id if account is not None else ""
    created = payments.connected_account_create(tenant_id=tenant.pk, replacing=replacing)
    if account is not None:
        replaced = ConnectedAccount.objects.filter(pk=account.pk, stripe_account_id=replacing).update(
            stripe_account_id=created["id"],
            is_test=created["is_test"],
            details_submitted=False,
            charges_enabled=False,
            payouts_enabled=False,
            requirements_due=[],
            disabled_reason="",
            synced_at=None,
            deauthorized_at=None,
        )
        account.refresh_from_db()
        if replaced:
            audit_log_record(
                action="connect.account_replaced",
                tenant=tenant,
                actor_user=acting_user,
                object_id=account.pk,
                data={"account": account.stripe_account_id, "replaced": replacing},
            )
        return account
    try:
        account, was_created = ConnectedAccount.objects.get_or_create(
            tenant=tenant, defaults={"stripe_account_id": created["id"], "is_test": created["is_test"]}
        )
    except IntegrityError:
        # Lost the race after get_or_create's own retry (or the account id is another organization's: never).
        account = ConnectedAccount.objects.for_tenant(tenant).get()
        was_created = False
    if was_created:
        audit_log_record(
            action="connect.account_created",
            tenant=tenant,
            actor_user=acting_user,
            object_id=account.pk,
            data={"account": account.stripe_account_id, "test": account.is_test},
        )
    return account


def connect_onboarding_start(*, tenant: Tenant, acting_user: ActingUser, site_url: str) -> str:
    """Start (or resume) the organization's onboarding: the URL to send the organizer to.

    At Stripe, a fresh account link (they are one-time and expire within minutes); in test mode the local
    simulated onboarding page. `site_url` is this site's origin for the return and refresh addresses.
    Raises payments.PaymentProviderError / TransientError when Stripe refuses or cannot be reached.
    """
    account = connected_account_ensure(tenant=tenant, acting_user=acting_user)
    audit_log_record(
        action="connect.onboarding_started",
        tenant=tenant,
        actor_user=acting_user,
        object_id=account.pk,
        data={"account": account.stripe_account_id},
    )
    return _onboarding_url(account=account, tenant=tenant, site_url=site_url)


def connect_onboarding_resume(*, tenant: Tenant, site_url: str) -> str | None:
    """A new onboarding URL for the organization's existing account (Stripe's refresh_url); None without one.

    Never creates an account and changes nothing of ours (a GET from Stripe's redirect): only the Payments
    page's POST starts onboarding.
    """
    account = ConnectedAccount.objects.for_tenant(tenant).first()
    if account is None or not account.is_usable:
        return None
    return _onboarding_url(account=account, tenant=tenant, site_url=site_url)


def _onboarding_url(*, account: ConnectedAccount, tenant: Tenant, site_url: str) -> str:
    kwargs = {"tenant_slug": tenant.slug}
    if account.is_test:
        return reverse("billing_organizer:connect-simulated", kwargs=kwargs)
    return payments.account_link_create(
        account_id=account.stripe_account_id,
        refresh_url=site_url + reverse("billing_organizer:connect-refresh", kwargs=kwargs),
        return_url=site_url + reverse("billing_organizer:connect-return", kwargs=kwargs),
    )


def _event_time(event: dict[str, Any]) -> datetime.datetime:
    created = event.get("created")
    if not isinstance(created, int):
        raise ValueError("The event has no creation time.")
    return datetime.datetime.fromtimestamp(created, tz=datetime.UTC)


def _not_newer(at: datetime.datetime) -> Q:
    """Rows whose mirror is not newer than `at`: the compare of the compare-and-set."""
    return Q(synced_at__isnull=True) | Q(synced_at__lte=at)


def connected_account_sync(*, event: dict[str, Any]) -> ConnectedAccount | None:
    """Mirror an `account.updated` event onto our row; None when the account is not ours.

    The payload is a trigger checked against our row: only a known account id is touched, and an event
    older than the one last applied changes nothing. A disconnected account stays off.
    """
    obj = (event.get("data") or {}).get("object") or {}
    account_id = str(obj.get("id") or "")
    if not account_id or (event.get("account") and event["account"] != account_id):
        return None
    account = ConnectedAccount.objects.filter(stripe_account_id=account_id).first()
    if account is None:
        return None
    at = _event_time(event)
    requirements = obj.get("requirements") or {}
    due = [str(item) for item in (requirements.get("currently_due") or [])][:50]
    state = {
        "charges_enabled": bool(obj.get("charges_enabled")),
        "payouts_enabled": bool(obj.get("payouts_enabled")),
        "details_submitted": bool(obj.get("details_submitted")),
        "requirements_due": due,
        "disabled_reason": str(requirements.get("disabled_reason") or "")[:100],
        "country": str(obj.get("country") or account.country or "")[:2].upper(),
        "default_currency": str(obj.get("default_currency") or account.default_currency or "")[:3].lower(),
    }
    applied = ConnectedAccount.objects.filter(
        _not_newer(at), pk=account.pk, stripe_account_id=account_id, deauthorized_at__isnull=True
    ).update(**state, synced_at=at)
    if applied:
        changed = {k: v for k, v in state.items() if getattr(account, k) != v}
        if changed:
            audit_log_record(
                action="connect.account_updated",
                tenant_id=account.tenant_id,
                object_id=account.pk,
                data={"account": account_id, **changed},
            )
    else:
        logger.info("Ignored an account.updated of %s older than the state kept (or disconnected)", account_id)
    account.refresh_from_db()
    return account


def connected_account_deauthorize(*, event: dict[str, Any]) -> ConnectedAccount | None:
    """`account.application.deauthorized`: the organization disconnected the platform, so charges stop at once.

    Applied whatever order events arrive in (a disconnection is final for that account); `synced_at` moves
    forward so an older account.updated cannot turn charges back on.
    """
    account_id = str(event.get("account") or "")
    account = ConnectedAccount.objects.filter(stripe_account_id=account_id).first() if account_id else None
    if account is None:
        return None
    at = _event_time(event)
    ConnectedAccount.objects.filter(pk=account.pk, stripe_account_id=account_id).update(
        charges_enabled=False, payouts_enabled=False, disabled_reason="platform_disconnected"
    )
    ConnectedAccount.objects.filter(_not_newer(at), pk=account.pk).update(synced_at=at)
    disconnected = ConnectedAccount.objects.filter(
        pk=account.pk, stripe_account_id=account_id, deauthorized_at__isnull=True
    ).update(deauthorized_at=timezone.now())
    if disconnected:
        audit_log_record(
            action="connect.account_disconnected",
            tenant_id=account.tenant_id,
            object_id=account.pk,
            data={"account": account_id},
        )
    account.refresh_from_db()
    return account


CONNECT_WEBHOOK_HANDLERS = {
    "account.updated": connected_account_sync,
    "account.application.deauthorized": connected_account_deauthorize,
}
