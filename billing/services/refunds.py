"""Refunds: by the organizer or seen from Stripe, booked once in the ledger; voided tickets."""

import logging
from typing import Any

from celery import Task
from django.core.exceptions import ValidationError
from django.utils import timezone
from django.utils.translation import gettext as _

from billing import payments
from billing.models import LedgerEntry, Order, Ticket
from billing.services.fees import fee_refund_for
from billing.services.holders import holder_follow
from billing.services.ledger import ledger_book, order_amounts_sync, order_fee_taken
from billing.services.waitlist import waitlist_seats_freed
from events import services as events_services
from eventsaas.money import money_format
from eventsaas.services import audit_log_record
from eventsaas.tasks import enqueue_on_commit
from tenants.models import ActingUser

logger = logging.getLogger(__name__)


REFUNDABLE = {Order.Status.PAID, Order.Status.PARTIALLY_REFUNDED, Order.Status.REFUND_DUE, Order.Status.NEEDS_REVIEW}


def order_refund(*, order: Order, acting_user: ActingUser, amount: int | None = None) -> Order:
    """Refund (part of) what the buyer paid, through Stripe; voids the tickets the refund covers."""
    order.refresh_from_db()
    if order.status not in REFUNDABLE or order.refundable_amount <= 0:
        raise ValidationError({"amount": _("This order has nothing left to refund.")})
    amount = order.refundable_amount if amount is None else amount
    if not 0 < amount <= order.refundable_amount:
        raise ValidationError(
            {
                "amount": _("Refund between %(min)s and %(max)s.")
                % {"min": money_format(1, order.currency), "max": money_format(order.refundable_amount, order.currency)}
            }
        )
    try:
        refund = payments.refund_create(
            order=order,
            amount=amount,
            # The same click sent twice is one refund at Stripe; a new refund after it is another key.
            idempotency_key=f"order-{order.pk}-refund-{order.refunded_amount}-{amount}",
        )
    except (payments.PaymentProviderError, payments.TransientError) as exc:
        raise ValidationError({"amount": _("Stripe did not accept the refund: %(error)s") % {"error": exc}}) from exc
    booked = _refund_book(order=order, refund=refund, refunded_before=order.refunded_amount, acting_user=acting_user)
    order_amounts_sync(order)
    refunds_apply(order)
    order.refresh_from_db()
    if booked:
        _refund_emails_enqueue(order)
    return order


def _refund_book(
    *,
    order: Order,
    refund: dict[str, Any],
    refunded_before: int,
    acting_user: ActingUser = None,
    by_stripe: bool = False,
) -> bool:
    """Book one Stripe refund in the ledger and the audit log, once (unique on the refund id).

    `refunded_before` is what the payment's earlier refunds gave back: the fee this refund gives back is
    the difference it makes to the cumulative, proportional fee refund (billing/services/fees.py).
    """
    charged = order.paid_amount
    fee = fee_refund_for(
        fee=order_fee_taken(order, charged=charged),
        charged=charged,
        refunded_before=refunded_before,
        amount=refund["amount"],
    )
    booked = ledger_book(
        order=order,
        kind=LedgerEntry.Kind.REFUND,
        amount=refund["amount"],
        currency=refund["currency"],
        stripe_object_id=refund["id"],
        fee=fee,
    )
    if booked:
        audit_log_record(
            action="order.refunded",
            tenant_id=order.tenant_id,
            event_id=order.event_id,
            actor_user=acting_user,
            object_id=order.pk,
            data={
                "amount": refund["amount"],
                "currency": refund["currency"],
                "refund": refund["id"],
                "fee_refunded": fee,
                "by": "stripe" if by_stripe else "organizer",
            },
        )
    return booked


def order_refunds_sync(*, order: Order) -> Order:
    """Stripe says the charge was refunded (maybe from its dashboard): book every refund it knows, then apply."""
    booked = []
    refunded_before = 0
    # Oldest first (Stripe lists newest first): each refund's fee part depends on the refunds before it.
    for refund in reversed(payments.refunds_list(payment_intent_id=order.stripe_payment_intent_id)):
        booked.append(_refund_book(order=order, refund=refund, refunded_before=refunded_before, by_stripe=True))
        refunded_before += refund["amount"]
    order_amounts_sync(order)
    refunds_apply(order)
    order.refresh_from_db()
    if any(booked):
        _refund_emails_enqueue(order)
    return order


def _refund_emails_enqueue(order: Order) -> None:
    """After the tickets are voided, so the email lists them: one email per refund not yet told (a claim each)."""
    enqueue_on_commit(_refund_emails_task(), order_id=str(order.pk))


def _refund_emails_task() -> Task[..., Any]:
    from billing.tasks import order_refund_emails_send_task

    return order_refund_emails_send_task


def refunds_apply(order: Order) -> None:
    """Move the status to (partially) refunded and void the tickets the refunded money covers."""
    if order.refunded_amount <= 0:
        return
    order.refresh_from_db(fields=["status", "paid_amount", "refunded_amount"])
    full = order.refunded_amount >= order.paid_amount
    target = Order.Status.REFUNDED if full else Order.Status.PARTIALLY_REFUNDED
    sources = [s for s in REFUNDABLE if s != target]
    if order.status in sources and (full or order.status == Order.Status.PAID):
        if Order.objects.filter(pk=order.pk, status=order.status).update(status=target):
            if order.status == Order.Status.NEEDS_REVIEW and full:
                # It still held reserved seats: a refunded order sells nothing.
                for line in order.lines:
                    events_services.seats_release(ticket_type_id=line["ticket_type"], quantity=line["quantity"])
                waitlist_seats_freed(ticket_type_ids=[line["ticket_type"] for line in order.lines])
            order.status = target
    _tickets_void_for_refund(order, full=full)


def _tickets_void_for_refund(order: Order, *, full: bool) -> None:
    """Void tickets, last seat first, while the refunded money covers their price. Each void frees its seat."""
    tickets = list(Ticket.objects.filter(order_id=order.pk).order_by("-seat"))
    covered = sum(t.price for t in tickets if not t.is_valid)
    for ticket in tickets:
        if not ticket.is_valid:
            continue
        if not full and covered + ticket.price > order.refunded_amount:
            break
        if ticket_void(ticket=ticket, reason="refunded"):
            covered += ticket.price


def ticket_void(*, ticket: Ticket, acting_user: ActingUser = None, reason: str = "voided") -> bool:
    """valid -> void, once; the seat goes back on sale and the holder's answer counts one person fewer.

    `reason` ("voided", "refunded") is what the organizer reads in the guest's answer history.
    """
    if not Ticket.objects.filter(pk=ticket.pk, status=Ticket.Status.VALID).update(
        status=Ticket.Status.VOID, voided_at=timezone.now()
    ):
        return False
    events_services.seats_unsell(ticket_type_id=ticket.ticket_type_id, quantity=1)
    waitlist_seats_freed(ticket_type_ids=[ticket.ticket_type_id])
    ticket.status = Ticket.Status.VOID
    audit_log_record(
        action="ticket.voided",
        tenant_id=ticket.tenant_id,
        event_id=ticket.event_id,
        actor_user=acting_user,
        object_id=ticket.pk,
    )
    guest_id = Ticket.objects.filter(pk=ticket.pk).values_list("guest_id", flat=True).first()
    if guest_id is not None:
        holder_follow(guest_id=guest_id, reason=reason)
    return True
