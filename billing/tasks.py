"""Celery tasks of billing: adapters that load by primary key and call one service (docs/workers.md)."""

import uuid

from celery import shared_task

from billing import notifications, services
from billing.models import Order, WaitlistEntry, WebhookEvent


@shared_task(name="billing.webhook_event_process")
def webhook_event_process_task(*, webhook_event_id: str) -> str:
    """Process one stored Stripe event; a no-op when it already was (replays, redeliveries)."""
    webhook_event = WebhookEvent.objects.filter(pk=webhook_event_id).first()
    if webhook_event is None:
        return "missing"
    return services.webhook_event_process(webhook_event=webhook_event).status


@shared_task(name="billing.orders_expire_due", autoretry_for=(), record_failure=False)
def orders_expire_due_task() -> int:
    """Periodic: expire pending orders past their hold and give their seats back (the next run is the retry)."""
    return services.orders_expire_due()


@shared_task(name="billing.webhook_events_requeue_stale", autoretry_for=(), record_failure=False)
def webhook_events_requeue_stale_task() -> int:
    """Periodic: process events that were stored but never processed."""
    return services.webhook_events_requeue_stale()


@shared_task(name="billing.order_confirmation_send")
def order_confirmation_send_task(*, order_id: str) -> bool:
    """Email the buyer their tickets with QR codes, once per order."""
    order = Order.objects.select_related("event").filter(pk=order_id).first()
    if order is None:
        return False
    return notifications.order_confirmation_send(order=order)


@shared_task(name="billing.order_attention_notify")
def order_attention_notify_task(*, order_id: str) -> bool:
    """Email the organizers that an order needs a refund or a review, once."""
    order = Order.objects.select_related("event", "event__tenant").filter(pk=order_id).first()
    if order is None:
        return False
    return notifications.order_attention_notify(order=order)


@shared_task(name="billing.order_refund_emails_send")
def order_refund_emails_send_task(*, order_id: str) -> int:
    """Email the buyer about each refund of the order, once per refund."""
    order = Order.objects.select_related("event", "event__tenant").filter(pk=order_id).first()
    if order is None:
        return 0
    return notifications.order_refund_emails_send(order=order)


@shared_task(name="billing.order_closed_notify")
def order_closed_notify_task(*, order_id: str, reason: str) -> bool:
    """Email the buyer that the order expired or its payment failed, once."""
    order = Order.objects.select_related("event", "event__tenant").filter(pk=order_id).first()
    if order is None:
        return False
    return notifications.order_closed_notify(order=order, reason=reason)


@shared_task(name="billing.waitlist_offer")
def waitlist_offer_task(*, ticket_type_id: str) -> int:
    """Seats of a type were freed: offer them to the people waiting, first in line first."""
    return services.waitlist_offer_next(ticket_type_id=uuid.UUID(ticket_type_id))


@shared_task(name="billing.waitlist_sweep", autoretry_for=(), record_failure=False)
def waitlist_sweep_task() -> dict[str, int]:
    """Periodic: expire unused offers (their seats pass to the next) and offer free seats to people waiting."""
    return services.waitlist_sweep()


@shared_task(name="billing.waitlist_offer_send")
def waitlist_offer_send_task(*, entry_id: str) -> bool:
    """Email a waitlist offer (the link and the hold's end), once per offer."""
    entry = WaitlistEntry.objects.select_related("event", "event__tenant", "ticket_type").filter(pk=entry_id).first()
    if entry is None:
        return False
    return notifications.waitlist_offer_send(entry=entry)


@shared_task(name="billing.waitlist_offer_expired_send")
def waitlist_offer_expired_send_task(*, entry_id: str) -> bool:
    """Email that a waitlist offer expired unused, once."""
    entry = WaitlistEntry.objects.select_related("event", "event__tenant", "ticket_type").filter(pk=entry_id).first()
    if entry is None:
        return False
    return notifications.waitlist_offer_expired_send(entry=entry)
