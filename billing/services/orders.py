"""Order arrows: expiry and cancellation, payments recorded from Stripe, tickets issued, review."""

import logging
from collections.abc import Collection
from datetime import datetime, timedelta
from typing import Any

from celery import Task
from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import IntegrityError, transaction
from django.db.models import F
from django.db.models.functions import Greatest
from django.utils import timezone
from django.utils.translation import gettext as _

from billing import payments
from billing.models import LedgerEntry, Order, Ticket
from billing.notifications import CLOSING_REASONS_EMAILED
from billing.services.holders import order_holder_create, order_holder_link
from billing.services.ledger import ledger_book, ledger_totals, order_amounts_sync, order_fee_taken
from billing.services.refunds import refunds_apply
from billing.services.seats import order_lines_reserve
from billing.services.waitlist import waitlist_seats_freed
from events import services as events_services
from eventsaas.db import atomic, is_transient_transaction_error, unique_insert
from eventsaas.fields import now_as_stored
from eventsaas.services import audit_log_record
from eventsaas.tasks import enqueue_on_commit
from guests.models import Guest
from tenants.models import ActingUser

logger = logging.getLogger(__name__)


def order_close(*, order: Order, to: str, reason: str, acting_user: ActingUser = None) -> bool:
    """pending -> expired | cancelled, releasing the reserved seats. False if the order had moved on."""
    if to not in {Order.Status.EXPIRED, Order.Status.CANCELLED}:
        raise ValueError(f"An order closes as expired or cancelled, not {to!r}.")
    now = now_as_stored()
    moved = Order.objects.filter(pk=order.pk, status=Order.Status.PENDING).update(status=to, closed_at=now)
    if not moved:
        return False
    for line in order.lines:
        events_services.seats_release(ticket_type_id=line["ticket_type"], quantity=line["quantity"])
    waitlist_seats_freed(ticket_type_ids=[line["ticket_type"] for line in order.lines])
    order.status, order.closed_at = to, now
    audit_log_record(
        action=f"order.{to}",
        tenant_id=order.tenant_id,
        event_id=order.event_id,
        actor_user=acting_user,
        object_id=order.pk,
        data={"reason": reason},
    )
    if reason in CLOSING_REASONS_EMAILED:
        enqueue_on_commit(_closed_notify_task(), order_id=str(order.pk), reason=reason)
    return True


def order_cancel_by_buyer(*, order: Order) -> bool:
    """The buyer left Checkout: free the seats now and close the session so it cannot be paid later."""
    cancelled = order_close(order=order, to=Order.Status.CANCELLED, reason="buyer_cancelled")
    if cancelled:
        payments.checkout_session_expire(session_id=order.stripe_session_id)
    return cancelled


def orders_expire_due(*, now: datetime | None = None) -> int:
    """The sweep: expire pending orders past their time (plus a grace for late webhooks). Returns how many."""
    cutoff = (now or timezone.now()) - timedelta(seconds=settings.ORDER_EXPIRY_GRACE_SECONDS)
    expired = 0
    for order in Order.objects.filter(status=Order.Status.PENDING, expires_at__lte=cutoff).order_by("expires_at")[
        :1000
    ]:
        if order_close(order=order, to=Order.Status.EXPIRED, reason="sweep"):
            expired += 1
            # A hold shorter than Stripe's 30-minute minimum leaves the session open: close it, so it cannot be paid.
            payments.checkout_session_expire(session_id=order.stripe_session_id)
    return expired


def order_payment_record(*, order: Order, payment_intent_id: str, amount: int, currency: str) -> Order:
    """Money for `order` was captured: book it, then make the order paid and issue its tickets, once.

    Safe to call any number of times, in any order with the other webhook
    handlers: the ledger entry is unique per payment, the status arrows are
    compare-and-set, tickets are unique per seat.
    """
    booked = ledger_book(
        order=order,
        kind=LedgerEntry.Kind.PAYMENT,
        amount=amount,
        currency=currency,
        stripe_object_id=payment_intent_id,
        fee=order_fee_taken(order, charged=amount),
    )
    first = _pending_order_pay(
        order, payment_intent_id=payment_intent_id, amount=amount, currency=currency, booked=booked
    )
    settled = first or _payment_settle(order, payment_intent_id=payment_intent_id, amount=amount, currency=currency)
    if settled and order.is_paid:
        tickets_issue(order=order, first=first)
        refunds_apply(order)
        enqueue_on_commit(_confirmation_task(), order_id=str(order.pk))
    return order


def _payment_settle(order: Order, *, payment_intent_id: str, amount: int, currency: str) -> bool:
    """Any payment but the usual first one (a redelivery, a late or mismatched payment, a race lost): each step
    re-reads what it needs, and `order` is read again. False for a mismatched amount: flagged
    for the organizer, no tickets."""
    if not order.stripe_payment_intent_id:
        Order.objects.filter(pk=order.pk, stripe_payment_intent_id="").update(
            stripe_payment_intent_id=payment_intent_id
        )
        order.stripe_payment_intent_id = payment_intent_id
    order_amounts_sync(order)
    order.refresh_from_db(fields=["status", "attention", "paid_at"])
    now = timezone.now()

    if amount != order.total or currency != order.currency:
        _mismatch_flag(order, amount=amount, currency=currency)
        order.refresh_from_db()
        return False

    if order.status == Order.Status.PENDING:
        if Order.objects.filter(pk=order.pk, status=Order.Status.PENDING).update(status=Order.Status.PAID, paid_at=now):
            _held_seats_sell(order)
            _paid_audit(order, late=False)
        else:
            # Closed (sweep, expiry event) since the read above, or paid by another delivery: read it again.
            order.refresh_from_db(fields=["status"])
    if order.status in {Order.Status.EXPIRED, Order.Status.CANCELLED}:
        _late_payment_accept(order, now=now)

    order.refresh_from_db()
    return True


def _pending_order_pay(order: Order, *, payment_intent_id: str, amount: int, currency: str, booked: bool) -> bool:
    """The usual first delivery of a payment: pending -> paid, with the payment intent and the ledger's totals,
    in one compare-and-set, then the held seats sold. `booked`: this call has just booked the payment in the
    ledger.

    False, with nothing written, unless the order was pending as read and the payment is of its amount, or
    when the order (or its payment intent) moved on since it was read; the caller then takes the long way.
    """
    if order.status != Order.Status.PENDING or amount != order.total or currency != order.currency:
        return False
    if booked and not order.stripe_payment_intent_id:
        # The ledger holds this payment alone, so it need not be read: a refund finds its order by the payment
        # intent, which no event had named yet (and the compare-and-set below checks it still has not), and
        # another delivery of this payment could not book it again.
        paid, refunded = amount, 0
    else:
        paid, refunded = ledger_totals(order)
    now = now_as_stored()
    changes: dict[str, Any] = {
        "status": Order.Status.PAID,
        "paid_at": now,
        # As order_amounts_sync: Greatest keeps a late, stale reader from moving them back.
        "paid_amount": Greatest(F("paid_amount"), paid),
        "refunded_amount": Greatest(F("refunded_amount"), refunded),
    }
    if not order.stripe_payment_intent_id:
        changes["stripe_payment_intent_id"] = payment_intent_id
    pending = Order.objects.filter(
        pk=order.pk, status=Order.Status.PENDING, stripe_payment_intent_id=order.stripe_payment_intent_id
    )
    if not pending.update(**changes):
        return False
    order.status, order.paid_at = Order.Status.PAID, now
    order.stripe_payment_intent_id = order.stripe_payment_intent_id or payment_intent_id
    order.paid_amount, order.refunded_amount = max(order.paid_amount, paid), max(order.refunded_amount, refunded)
    _held_seats_sell(order)
    _paid_audit(order, late=False)
    return True


def order_free_complete(*, order: Order) -> Order:
    """pending -> paid for an order whose total is 0: nothing to capture, so no ledger entry.

    Whoever wins the compare-and-set sells the held seats; issuing the tickets (and
    the holder's guest) and the confirmation email are idempotent, so a second call
    only repeats harmless work.
    """
    if order.total:
        raise ValueError("Only a free order completes without a payment.")
    if Order.objects.filter(pk=order.pk, status=Order.Status.PENDING).update(
        status=Order.Status.PAID, paid_at=timezone.now()
    ):
        _held_seats_sell(order)
        audit_log_record(
            action="order.paid",
            tenant_id=order.tenant_id,
            event_id=order.event_id,
            object_id=order.pk,
            data={"late": False, "total": 0, "currency": order.currency, "free": True},
        )
    order.refresh_from_db()
    if order.is_paid:
        tickets_issue(order=order)
        enqueue_on_commit(_confirmation_task(), order_id=str(order.pk))
    return order


def _held_seats_sell(order: Order) -> None:
    """The seats the order held while it was pending become sold (it has just become paid)."""
    for line in order.lines:
        events_services.seats_sell_reserved(ticket_type_id=line["ticket_type"], quantity=line["quantity"])


def _mismatch_flag(order: Order, *, amount: int, currency: str) -> None:
    """Not silently accepted: the organizer sees the order and decides (refund it, or accept it).

    A pending order keeps its seats (needs review); one that already gave them back
    is refund due. Re-read and retried when the sweep closes the order in between.
    """
    for _attempt in range(3):
        if order.status not in {Order.Status.PENDING, Order.Status.EXPIRED, Order.Status.CANCELLED}:
            return
        to = Order.Status.NEEDS_REVIEW if order.status == Order.Status.PENDING else Order.Status.REFUND_DUE
        if Order.objects.filter(pk=order.pk, status=order.status).update(
            status=to, attention=Order.Attention.AMOUNT_MISMATCH
        ):
            audit_log_record(
                action="order.amount_mismatch",
                tenant_id=order.tenant_id,
                event_id=order.event_id,
                object_id=order.pk,
                data={"expected": [order.total, order.currency], "reported": [amount, currency]},
            )
            _attention_notify(order)
            return
        order.refresh_from_db(fields=["status", "attention"])


def _late_payment_accept(order: Order, *, now: datetime) -> None:
    """A payment for an order that already gave its seats back: honour it if seats are free, else flag it.

    The order is claimed first (attention "late_payment", a compare-and-set), so of
    several deliveries arriving together only one takes seats: otherwise one could
    take the last seats while another, finding none, sent the buyer to a refund.
    """
    previous = order.status
    claimed = Order.objects.filter(pk=order.pk, status=previous, attention="").update(
        attention=Order.Attention.LATE_PAYMENT
    )
    if not claimed:
        return
    failed = order_lines_reserve(
        order.lines, reserve=events_services.seats_sell_unreserved, undo=events_services.seats_unsell
    )
    mine = Order.objects.filter(pk=order.pk, status=previous, attention=Order.Attention.LATE_PAYMENT)
    if not failed:
        # closed_at says when it expired or was cancelled: a paid order is neither (the audit log keeps the expiry).
        if mine.update(status=Order.Status.PAID, paid_at=now, attention="", closed_at=None):
            _paid_audit(order, late=True)
        else:
            for line in order.lines:  # the order moved on meanwhile: give these seats back
                events_services.seats_unsell(ticket_type_id=line["ticket_type"], quantity=line["quantity"])
        return
    if mine.update(status=Order.Status.REFUND_DUE, attention=Order.Attention.SEATS_GONE):
        audit_log_record(
            action="order.refund_due",
            tenant_id=order.tenant_id,
            event_id=order.event_id,
            object_id=order.pk,
            data={"reason": "seats_gone", "sold_out_ticket_types": failed},
        )
        _attention_notify(order)


def _attention_notify(order: Order) -> None:
    from billing.tasks import order_attention_notify_task

    enqueue_on_commit(order_attention_notify_task, order_id=str(order.pk))


def _paid_audit(order: Order, *, late: bool) -> None:
    audit_log_record(
        action="order.paid",
        tenant_id=order.tenant_id,
        event_id=order.event_id,
        object_id=order.pk,
        data={"late": late, "total": order.total, "currency": order.currency},
    )


def _confirmation_task() -> Task[..., Any]:
    from billing.tasks import order_confirmation_send_task

    return order_confirmation_send_task


def _closed_notify_task() -> Task[..., Any]:
    from billing.tasks import order_closed_notify_task

    return order_closed_notify_task


def tickets_issue(*, order: Order, first: bool = False) -> None:
    """One ticket per seat of a paid order; creating the missing ones only, so calling it again is harmless.

    The buyer becomes the order's guest of the event, once, holding every ticket (billing.services.holders).
    `first`: the caller has just moved the order to paid for the first time (its compare-and-set won), so it
    has no tickets yet: the short way, unless a redelivery of the payment got there first.
    """
    if first and order.attendees and _first_tickets_issue(order):
        return
    existing = set(Ticket.objects.filter(order_id=order.pk).values_list("seat", flat=True))
    missing = _order_tickets(order, skip_seats=existing)
    if missing:
        try:
            with atomic():
                Ticket.objects.bulk_create(missing)
        except Exception as exc:  # a failed MongoDB commit raises pymongo's error, not a DatabaseError
            if not _lost_to_another_issue(exc):
                raise
            # Add the seats one by one; each insert waits for the other writer, and the unique
            # (order, seat) index keeps the seats it stored.
            for ticket in missing:
                try:
                    with transaction.atomic():  # a savepoint on PostgreSQL; a plain insert on MongoDB
                        ticket.save(force_insert=True)
                except IntegrityError:
                    pass
    # Every seat has its ticket now (stored here, or by a delivery that got there first).
    order_holder_link(order=order, tickets_issued=bool(order.attendees))


def _first_tickets_issue(order: Order) -> bool:
    """The first payment's tickets, held from the start: the guest is inserted coming for every seat, then
    the tickets pointing at it in one insert; nothing to read, link or count afterwards (a void after this
    corrects the guest itself), where the long way reads the seats and the guest, links and recounts.

    False when another issue got there first (the guest exists, or a seat is taken): the caller then takes
    the long way, which links and recounts whatever is there.
    """
    guest = order_holder_create(order=order, coming=len(order.attendees))
    if guest is None:
        return False
    try:
        with unique_insert(all_or_none=True):
            Ticket.objects.bulk_create(_order_tickets(order, guest=guest))
    except Exception as exc:
        if not _lost_to_another_issue(exc):
            raise
        return False
    return True


def _order_tickets(order: Order, *, skip_seats: Collection[int] = (), guest: Guest | None = None) -> list[Ticket]:
    prices = {line["ticket_type"]: line["unit_price"] for line in order.lines}
    return [
        Ticket(
            tenant_id=order.tenant_id,
            event_id=order.event_id,
            order_id=order.pk,
            ticket_type_id=attendee["ticket_type"],
            seat=seat,
            attendee_name=attendee.get("name", ""),
            price=prices[attendee["ticket_type"]],
            currency=order.currency,
            guest=guest,
        )
        for seat, attendee in enumerate(order.attendees, start=1)
        if seat not in skip_seats
    ]


def _lost_to_another_issue(exc: Exception) -> bool:
    """Another delivery issued seats of this order at the same moment: SQL reports the seats it took
    (IntegrityError), a MongoDB transaction that touched them first aborts with WriteConflict."""
    return isinstance(exc, IntegrityError) or is_transient_transaction_error(exc)


def order_review_accept(*, order: Order, acting_user: ActingUser) -> Order:
    """The organizer accepts a payment whose amount differed: the held seats are sold and tickets issued."""
    if not Order.objects.filter(pk=order.pk, status=Order.Status.NEEDS_REVIEW).update(
        status=Order.Status.PAID, paid_at=order.paid_at or timezone.now()
    ):
        raise ValidationError(_("Only an order that needs review can be accepted."))
    _held_seats_sell(order)
    audit_log_record(
        action="order.review_accepted",
        tenant_id=order.tenant_id,
        event_id=order.event_id,
        actor_user=acting_user,
        object_id=order.pk,
    )
    order.refresh_from_db()
    tickets_issue(order=order)
    # A refund made while it was in review still counts: status and voided tickets follow it.
    refunds_apply(order)
    order.refresh_from_db()
    enqueue_on_commit(_confirmation_task(), order_id=str(order.pk))
    return order


def order_confirmation_resend(*, order: Order, acting_user: ActingUser) -> None:
    """Send the tickets email again (the buyer lost it, or gave a wrong address that was corrected)."""
    if not order.is_paid:
        raise ValidationError(_("Only a paid order has tickets to send."))
    # Reopen the email's claim; the task claims it again, so two clicks still send one email.
    Order.objects.filter(pk=order.pk).update(confirmation_sent_at=None, confirmation_claimed_at=None)
    audit_log_record(
        action="order.confirmation_resent",
        tenant_id=order.tenant_id,
        event_id=order.event_id,
        actor_user=acting_user,
        object_id=order.pk,
        data={"to": order.buyer_email},
    )
    enqueue_on_commit(_confirmation_task(), order_id=str(order.pk))
