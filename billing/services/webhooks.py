"""Stripe webhooks: stored once, processed in a task, checked against our own rows."""

import logging
import uuid
from datetime import timedelta
from typing import Any

from django.db.models import F
from django.utils import timezone

from billing import payments
from billing.models import ConnectedAccount, Order, WebhookEvent
from billing.services.connect import CONNECT_WEBHOOK_HANDLERS
from billing.services.orders import order_close, order_payment_record
from billing.services.refunds import order_refunds_sync
from eventsaas.db import insert_once, run_optimistically
from eventsaas.fields import now_as_stored
from eventsaas.services import audit_log_together
from eventsaas.tasks import TransientError, enqueue_on_commit

logger = logging.getLogger(__name__)


def webhook_receive(*, payload: bytes, signature: str) -> tuple[WebhookEvent, bool]:
    """Verify, store once, enqueue processing. Returns (event row, whether it was new).

    Raises stripe.SignatureVerificationError or ValueError for anything that is
    not a recent event signed with our secret; nothing is stored then.
    """
    return _webhook_store(payments.event_verify(payload=payload, signature=signature))


def connect_webhook_receive(*, payload: bytes, signature: str) -> tuple[WebhookEvent, bool]:
    """As webhook_receive, for the Connect endpoint: verified with the Connect secret only.

    An event signed with the platform endpoint's secret is refused here, and a Connect event at the platform
    endpoint, so neither endpoint can be fed the other's deliveries.
    """
    return _webhook_store(payments.connect_event_verify(payload=payload, signature=signature))


def _webhook_store(event: dict[str, Any]) -> tuple[WebhookEvent, bool]:
    row = WebhookEvent(
        stripe_event_id=event["id"],
        type=event.get("type", ""),
        payload=event,
        is_test=str(event["id"]).startswith(f"evt_{payments.TEST_ID_PREFIX}"),
    )
    # Insert first: most deliveries are new, and the unique Stripe id turns a redelivery away.
    if not insert_once(row):
        return WebhookEvent.objects.get(stripe_event_id=event["id"]), False
    from billing.tasks import webhook_event_process_task

    enqueue_on_commit(webhook_event_process_task, webhook_event_id=str(row.pk))
    return row, True


def _uuid_or_none(value: object) -> uuid.UUID | None:
    try:
        return uuid.UUID(str(value))
    except (TypeError, ValueError):
        return None


def _order_for_session(session: dict[str, Any]) -> Order | None:
    """Our order for a Checkout Session, checked against the ids we gave Stripe (the payload is only a trigger)."""
    metadata = session.get("metadata")
    metadata = metadata if isinstance(metadata, dict) else {}  # signed, but shaped by whoever holds the secret
    order_id = _uuid_or_none(metadata.get("order_id") or session.get("client_reference_id"))
    tenant_id, event_id = _uuid_or_none(metadata.get("tenant_id")), _uuid_or_none(metadata.get("event_id"))
    if not (order_id and tenant_id and event_id):
        return None
    order = Order.objects.filter(pk=order_id, tenant_id=tenant_id, event_id=event_id).first()
    if order is None or (order.stripe_session_id and order.stripe_session_id != session.get("id")):
        return None
    return order


def _on_session_paid(session: dict[str, Any]) -> Order | None:
    order = _order_for_session(session)
    if order is None:
        return None
    if session.get("payment_status") != "paid":
        # Delayed methods (bank debits): wait for async_payment_succeeded / failed.
        if session.get("payment_intent") and not order.stripe_payment_intent_id:
            Order.objects.filter(pk=order.pk, stripe_payment_intent_id="").update(
                stripe_payment_intent_id=session["payment_intent"]
            )
        return order
    return order_payment_record(
        order=order,
        payment_intent_id=session.get("payment_intent") or session["id"],
        amount=int(session.get("amount_total") or 0),
        currency=str(session.get("currency") or ""),
    )


def _on_session_failed(session: dict[str, Any]) -> Order | None:
    order = _order_for_session(session)
    if order is not None:
        order_close(order=order, to=Order.Status.CANCELLED, reason="payment_failed")
    return order


def _on_session_expired(session: dict[str, Any]) -> Order | None:
    order = _order_for_session(session)
    if order is not None:
        order_close(order=order, to=Order.Status.EXPIRED, reason="checkout_expired")
    return order


def _on_charge_refunded(charge: dict[str, Any]) -> Order | None:
    payment_intent = charge.get("payment_intent")
    if not payment_intent:
        return None
    order = Order.objects.filter(stripe_payment_intent_id=payment_intent).first()
    if order is None:
        metadata = charge.get("metadata")
        metadata = metadata if isinstance(metadata, dict) else {}
        order_id, tenant_id = _uuid_or_none(metadata.get("order_id")), _uuid_or_none(metadata.get("tenant_id"))
        if order_id and tenant_id and Order.objects.filter(pk=order_id, tenant_id=tenant_id).exists():
            # Ours, but its checkout.session.completed has not been processed yet (events
            # arrive in any order): retry later rather than lose the refund.
            raise TransientError("The payment of this refund is not recorded yet.")
        return None
    return order_refunds_sync(order=order)


WEBHOOK_HANDLERS = {
    "checkout.session.completed": _on_session_paid,
    "checkout.session.async_payment_succeeded": _on_session_paid,
    "checkout.session.async_payment_failed": _on_session_failed,
    "checkout.session.expired": _on_session_expired,
    "charge.refunded": _on_charge_refunded,
}


def webhook_event_process(*, webhook_event: WebhookEvent) -> WebhookEvent:
    """Run the handler of a stored event; a no-op once it was processed. Errors are stored, then raised."""
    if webhook_event.status in {WebhookEvent.Status.PROCESSED, WebhookEvent.Status.IGNORED}:
        return webhook_event
    handler = WEBHOOK_HANDLERS.get(webhook_event.type)
    account_handler = CONNECT_WEBHOOK_HANDLERS.get(webhook_event.type)
    obj = (webhook_event.payload.get("data") or {}).get("object") or {}

    def handle() -> tuple[dict[str, Any], int]:
        # Account events need the envelope (`account`, `created`), so their handlers take the whole event.
        # A payment's audit entries (order paid, holder guest created and coming) go in one insert.
        with audit_log_together():
            result: Order | ConnectedAccount | None = (
                account_handler(event=webhook_event.payload) if account_handler else handler(obj) if handler else None
            )
        outcome = {
            "status": WebhookEvent.Status.PROCESSED if result is not None else WebhookEvent.Status.IGNORED,
            "processed_at": now_as_stored(),
            "error": "",
            "tenant_id": result.tenant_id if result is not None else None,
            "order_id": result.pk if isinstance(result, Order) else None,
        }
        # The attempt is counted with its outcome, in the same write (one statement fewer per
        # delivery): a worker killed inside the handler leaves no count, and the stale sweep sends
        # the event again (webhook_events_requeue_stale).
        stored = (
            WebhookEvent.objects.filter(pk=webhook_event.pk)
            .exclude(status=outcome["status"])
            .update(**outcome, attempts=F("attempts") + 1)
        )
        return outcome, stored

    try:
        # One transaction for speed, not correctness: on PostgreSQL one commit (one WAL flush) instead of one
        # per statement, which was most of a payment's time, and no savepoint around each insert that could
        # be refused (run_optimistically). The handlers are compare-and-set and idempotent, so a delivery
        # processed twice or cut short is still right; on MongoDB each write stands alone as before.
        outcome, stored = run_optimistically(handle)
    except Exception as exc:
        WebhookEvent.objects.filter(pk=webhook_event.pk).exclude(status=WebhookEvent.Status.PROCESSED).update(
            status=WebhookEvent.Status.FAILED, error=f"{type(exc).__name__}: {exc}", attempts=F("attempts") + 1
        )
        raise
    if stored:  # the row is as this call left it: no need to read it back
        for name, value in outcome.items():
            setattr(webhook_event, name, value)
        webhook_event.attempts += 1
    else:  # another delivery of the same event finished it first
        webhook_event.refresh_from_db()
    return webhook_event


def webhook_events_requeue_stale(*, older_than_seconds: int = 300) -> int:
    """Send again events stored but never processed (the enqueue failed, or the worker died), up to 10 attempts.

    A failure counts its own attempt; an event still `received` reported no outcome (its worker was killed
    inside the handler, or its task was never sent), so the resend is counted here: an event that kills
    every worker that takes it stops after 10 sweeps instead of being sent every 5 minutes forever.
    """
    from billing.tasks import webhook_event_process_task

    cutoff = timezone.now() - timedelta(seconds=older_than_seconds)
    stale = list(
        WebhookEvent.objects.filter(
            status__in=[WebhookEvent.Status.RECEIVED, WebhookEvent.Status.FAILED],
            received_at__lte=cutoff,
            attempts__lt=10,
        ).values_list("pk", flat=True)[:500]
    )
    WebhookEvent.objects.filter(pk__in=stale, status=WebhookEvent.Status.RECEIVED).update(attempts=F("attempts") + 1)
    for pk in stale:
        enqueue_on_commit(webhook_event_process_task, webhook_event_id=str(pk))
    return len(stale)


def order_simulate_payment(*, order: Order, paid: bool = True) -> WebhookEvent:
    """Test-payment mode: pay (or abandon) the order through a locally signed event and the normal webhook path."""
    event_type = "checkout.session.completed" if paid else "checkout.session.expired"
    payload, signature = payments.simulated_payment_event(order=order, event_type=event_type)
    row, _created = webhook_receive(payload=payload, signature=signature)
    return row  # processed by the task once the transaction commits


def connect_simulate_onboarding(*, account: ConnectedAccount, completed: bool = True) -> WebhookEvent:
    """Test-payment mode: finish (or not) a simulated onboarding through a signed account.updated and the
    same Connect webhook path a real event takes."""
    payload, signature = payments.simulated_account_event(account=account, charges_enabled=completed)
    row, _created = connect_webhook_receive(payload=payload, signature=signature)
    return row  # processed by the task once the transaction commits
