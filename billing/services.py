"""Write operations of ticketed events: checkout, payments from webhooks, refunds, tickets, check-in.

Every invariant is a single-row compare-and-set or a unique constraint, so it
holds on SQLite, PostgreSQL and MongoDB alike without locks or multi-row
transactions (../shared/DESIGN.md):

- seats: `TicketType.sold + reserved <= capacity` through conditional updates;
- order status arrows: `filter(pk=..., status=<from>).update(status=<to>)`, and
  only the caller whose update matched does the side effects (seat release,
  selling the reserved seats);
- tickets: unique (order, seat); ledger: unique (Stripe object, kind);
  webhook events: unique Stripe event id.
"""

import logging
import uuid
from dataclasses import dataclass, field
from datetime import timedelta

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import IntegrityError, transaction
from django.db.models import F, Q, Sum
from django.db.models.functions import Greatest
from django.urls import reverse
from django.utils import timezone
from django.utils.translation import gettext as _

from billing import payments
from billing.models import LedgerEntry, Order, Ticket, WebhookEvent
from events import services as events_services
from events.models import Event, TicketType
from eventsaas.db import atomic, is_transient_transaction_error
from eventsaas.fields import now_as_stored
from eventsaas.money import money_format
from eventsaas.services import audit_log_record
from eventsaas.tasks import TransientError, enqueue_on_commit
from guests.codes import normalize_code

logger = logging.getLogger(__name__)

MAX_TICKETS_PER_ORDER = 100


class SoldOut(Exception):
    """Some requested ticket types do not have enough seats left; nothing was reserved."""

    def __init__(self, ticket_types: list[TicketType]):
        super().__init__(", ".join(t.name for t in ticket_types))
        self.ticket_types = ticket_types


class PaymentsUnavailable(Exception):
    """No way to take payments right now (not configured, or the provider failed); nothing was charged."""


def _reserve_lines(lines: list[dict], *, reserve=None, undo=None) -> list[str]:
    """Apply `reserve` to every line; on the first failure undo the ones done. Returns the failed type ids."""
    reserve = reserve or events_services.seats_reserve
    undo = undo or events_services.seats_release
    done, failed = [], []
    for line in lines:
        if reserve(ticket_type_id=line["ticket_type"], quantity=line["quantity"]):
            done.append(line)
        else:
            failed.append(line["ticket_type"])
    if failed:
        for line in done:
            undo(ticket_type_id=line["ticket_type"], quantity=line["quantity"])
    return failed


# --- Checkout -------------------------------------------------------------------------


@dataclass
class CheckoutItem:
    ticket_type_id: str
    quantity: int


@dataclass
class CheckoutRequest:
    items: list[CheckoutItem]
    buyer_name: str
    buyer_email: str
    attendee_names: list[str] = field(default_factory=list)
    dietary: str = ""
    answers: dict = field(default_factory=dict)
    access_code: str = ""
    language: str = "en"


def _checkout_lines(*, event: Event, request: CheckoutRequest, at) -> tuple[list[dict], list[dict]]:
    """Validated order lines and attendees, or a ValidationError with field messages."""
    wanted: dict[str, int] = {}
    for item in request.items:
        if item.quantity < 0:
            raise ValidationError({"items": _("Quantities cannot be negative.")})
        if item.quantity:
            wanted[str(item.ticket_type_id)] = wanted.get(str(item.ticket_type_id), 0) + item.quantity
    if not wanted:
        raise ValidationError({"items": _("Choose at least one ticket.")})
    types = {
        str(t.pk): t
        for t in TicketType.objects.filter(tenant_id=event.tenant_id, event_id=event.pk, pk__in=list(wanted))
    }
    lines, errors = [], []
    for type_id, quantity in wanted.items():
        ticket_type = types.get(type_id)
        visible = ticket_type is not None and (
            not ticket_type.access_code or ticket_type.access_code == request.access_code.strip()
        )
        if not visible:
            errors.append(_("This ticket type is not on sale for this event."))
            continue
        if not ticket_type.is_in_sales_window(at):
            errors.append(_("“%(name)s” is not on sale now.") % {"name": ticket_type.name})
            continue
        if quantity > ticket_type.max_per_order:
            errors.append(
                _("At most %(max)s “%(name)s” tickets per order.")
                % {"max": ticket_type.max_per_order, "name": ticket_type.name}
            )
            continue
        lines.append(
            {
                "ticket_type": type_id,
                "name": ticket_type.name,
                "quantity": quantity,
                "unit_price": ticket_type.price,
                "currency": ticket_type.currency,
            }
        )
    if errors:
        raise ValidationError({"items": errors})
    if len({line["currency"] for line in lines}) > 1:
        raise ValidationError({"items": _("Tickets in different currencies need separate orders.")})
    total_quantity = sum(line["quantity"] for line in lines)
    if total_quantity > MAX_TICKETS_PER_ORDER:
        raise ValidationError({"items": _("At most %(max)s tickets per order.") % {"max": MAX_TICKETS_PER_ORDER}})
    names = [name.strip() for name in request.attendee_names]
    if names and len(names) != total_quantity:
        raise ValidationError({"attendees": _("Give one name per ticket (%(count)s).") % {"count": total_quantity}})
    if event.attendee_names_required and (not names or not all(names)):
        raise ValidationError({"attendees": _("Give the name of the person for each ticket.")})
    if any(len(name) > 200 for name in names):
        raise ValidationError({"attendees": _("Names can have at most 200 characters.")})
    attendees = []
    for line in lines:
        for _seat in range(line["quantity"]):
            attendees.append({"ticket_type": line["ticket_type"], "name": names[len(attendees)] if names else ""})
    return lines, attendees


def checkout_start(*, event: Event, request: CheckoutRequest, success_url: str = "", cancel_url: str = "") -> Order:
    """Reserve the seats, create a pending order and its Checkout Session.

    Raises ValidationError (bad input, field messages), SoldOut (which types lack
    seats; nothing reserved) or PaymentsUnavailable (nothing reserved or charged).
    `success_url`/`cancel_url` are absolute; by default the order and cancel pages.
    """
    if not event.is_on_sale or not event.tenant.is_verified:
        raise ValidationError({"items": _("Tickets for this event are not on sale.")})
    mode = payments.payment_mode()
    if mode == "off":
        raise PaymentsUnavailable(_("Ticket sales are not open yet: payments are not configured."))
    now = timezone.now()
    lines, attendees = _checkout_lines(event=event, request=request, at=now)
    buyer = Order(buyer_name=request.buyer_name.strip(), buyer_email=request.buyer_email.strip())
    buyer_errors = {}
    if not buyer.buyer_name:
        buyer_errors["buyer_name"] = _("Enter your name.")
    try:
        Order._meta.get_field("buyer_email").run_validators(buyer.buyer_email)
        if not buyer.buyer_email:
            raise ValidationError(_("Enter your email address."))
    except ValidationError as exc:
        buyer_errors["buyer_email"] = exc.messages
    if buyer_errors:
        raise ValidationError(buyer_errors)
    answers = events_services.event_answers_clean(event=event, answers=request.answers)

    failed = _reserve_lines(lines)
    if failed:
        raise SoldOut(list(TicketType.objects.filter(pk__in=failed)))

    hold = timedelta(minutes=settings.ORDER_HOLD_MINUTES)
    order = Order(
        tenant_id=event.tenant_id,
        event_id=event.pk,
        buyer_name=buyer.buyer_name,
        buyer_email=buyer.buyer_email,
        lines=[{k: v for k, v in line.items() if k != "currency"} for line in lines],
        attendees=attendees,
        dietary=request.dietary.strip()[:2000],
        answers=answers,
        total=sum(line["quantity"] * line["unit_price"] for line in lines),
        currency=lines[0]["currency"],
        is_test=mode == "test",
        language=request.language,
        created_at=now,
        expires_at=now + hold,
    )
    try:
        order.save(force_insert=True)
        session_id, url = payments.checkout_session_create(
            order=order,
            event=event,
            success_url=success_url or _absolute(order_page_path(order)) + "?paid=1",
            cancel_url=cancel_url or _absolute(order_cancel_path(order)),
        )
    except Exception as exc:
        # Give the seats back through the order's own arrow, so the sweep cannot release them twice.
        if order._state.adding is False:
            order_close(order=order, to=Order.Status.CANCELLED, reason="checkout_failed")
        else:
            for line in lines:
                events_services.seats_release(ticket_type_id=line["ticket_type"], quantity=line["quantity"])
        if isinstance(exc, (payments.PaymentProviderError, payments.TransientError)):
            logger.warning("Checkout session for order %s failed: %s", order.pk, exc)
            raise PaymentsUnavailable(
                _("The payment provider is not answering; nothing was charged. Try again.")
            ) from exc
        raise
    order.stripe_session_id = session_id
    order.checkout_url = url or _absolute(test_checkout_path(order))
    Order.objects.filter(pk=order.pk).update(stripe_session_id=session_id, checkout_url=order.checkout_url)
    audit_log_record(
        action="order.created",
        tenant_id=event.tenant_id,
        event_id=event.pk,
        object_id=order.pk,
        data={"total": order.total, "currency": order.currency, "quantity": order.quantity, "test": order.is_test},
    )
    return order


def _absolute(path: str) -> str:
    return settings.SITE_URL + path


def order_page_path(order: Order) -> str:
    return reverse("billing:order", kwargs={"order_id": order.pk, "token": order.access_token})


def order_cancel_path(order: Order) -> str:
    return reverse("billing:order-cancel", kwargs={"order_id": order.pk, "token": order.access_token})


def test_checkout_path(order: Order) -> str:
    return reverse("billing:test-checkout", kwargs={"order_id": order.pk, "token": order.access_token})


# --- Order arrows ---------------------------------------------------------------------


def order_close(*, order: Order, to: str, reason: str, acting_user=None) -> bool:
    """pending -> expired | cancelled, releasing the reserved seats. False if the order had moved on."""
    if to not in {Order.Status.EXPIRED, Order.Status.CANCELLED}:
        raise ValueError(f"An order closes as expired or cancelled, not {to!r}.")
    now = now_as_stored()
    moved = Order.objects.filter(pk=order.pk, status=Order.Status.PENDING).update(status=to, closed_at=now)
    if not moved:
        return False
    for line in order.lines:
        events_services.seats_release(ticket_type_id=line["ticket_type"], quantity=line["quantity"])
    order.status, order.closed_at = to, now
    audit_log_record(
        action=f"order.{to}",
        tenant_id=order.tenant_id,
        event_id=order.event_id,
        actor_user=acting_user,
        object_id=order.pk,
        data={"reason": reason},
    )
    return True


def order_cancel_by_buyer(*, order: Order) -> bool:
    """The buyer left Checkout: free the seats now and close the session so it cannot be paid later."""
    cancelled = order_close(order=order, to=Order.Status.CANCELLED, reason="buyer_cancelled")
    if cancelled:
        payments.checkout_session_expire(session_id=order.stripe_session_id)
    return cancelled


def orders_expire_due(*, now=None) -> int:
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


def _ledger_book(*, order: Order, kind: str, amount: int, currency: str, stripe_object_id: str) -> bool:
    """Book a payment or refund once; False if it was booked already."""
    try:
        # A savepoint on PostgreSQL. Not a MongoDB transaction: a plain insert there waits
        # for a racing one and then fails on the unique index, like SQL (eventsaas.db.atomic).
        with transaction.atomic():
            LedgerEntry.objects.create(
                tenant_id=order.tenant_id,
                event_id=order.event_id,
                order_id=order.pk,
                kind=kind,
                amount=amount,
                currency=currency,
                stripe_object_id=stripe_object_id,
            )
    except IntegrityError:
        return False
    return True


def _ledger_totals(order: Order) -> tuple[int, int]:
    sums = LedgerEntry.objects.filter(order_id=order.pk).aggregate(
        paid=Sum("amount", filter=Q(kind=LedgerEntry.Kind.PAYMENT), default=0),
        refunded=Sum("amount", filter=Q(kind=LedgerEntry.Kind.REFUND), default=0),
    )
    return sums["paid"], sums["refunded"]


def _amounts_sync(order: Order) -> None:
    """Copy the ledger's totals onto the order; Greatest keeps a late, stale reader from moving them back."""
    paid, refunded = _ledger_totals(order)
    Order.objects.filter(pk=order.pk).update(
        paid_amount=Greatest(F("paid_amount"), paid), refunded_amount=Greatest(F("refunded_amount"), refunded)
    )
    order.paid_amount = max(order.paid_amount, paid)
    order.refunded_amount = max(order.refunded_amount, refunded)


def order_payment_record(*, order: Order, payment_intent_id: str, amount: int, currency: str) -> Order:
    """Money for `order` was captured: book it, then make the order paid and issue its tickets, once.

    Safe to call any number of times, in any order with the other webhook
    handlers: the ledger entry is unique per payment, the status arrows are
    compare-and-set, tickets are unique per seat.
    """
    _ledger_book(
        order=order, kind=LedgerEntry.Kind.PAYMENT, amount=amount, currency=currency, stripe_object_id=payment_intent_id
    )
    if not order.stripe_payment_intent_id:
        Order.objects.filter(pk=order.pk, stripe_payment_intent_id="").update(
            stripe_payment_intent_id=payment_intent_id
        )
        order.stripe_payment_intent_id = payment_intent_id
    _amounts_sync(order)
    order.refresh_from_db(fields=["status", "attention", "paid_at"])
    now = timezone.now()

    if amount != order.total or currency != order.currency:
        _mismatch_flag(order, amount=amount, currency=currency)
        order.refresh_from_db()
        return order

    if order.status == Order.Status.PENDING:
        if Order.objects.filter(pk=order.pk, status=Order.Status.PENDING).update(status=Order.Status.PAID, paid_at=now):
            for line in order.lines:
                events_services.seats_sell_reserved(ticket_type_id=line["ticket_type"], quantity=line["quantity"])
            _paid_audit(order, late=False)
        else:
            # Closed (sweep, expiry event) since the read above, or paid by another delivery: read it again.
            order.refresh_from_db(fields=["status"])
    if order.status in {Order.Status.EXPIRED, Order.Status.CANCELLED}:
        _late_payment_accept(order, now=now)

    order.refresh_from_db()
    if order.is_paid:
        tickets_issue(order=order)
        _refunds_apply(order)
        enqueue_on_commit(_confirmation_task(), order_id=str(order.pk))
    return order


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


def _late_payment_accept(order: Order, *, now) -> None:
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
    failed = _reserve_lines(
        order.lines, reserve=events_services.seats_sell_unreserved, undo=events_services.seats_unsell
    )
    mine = Order.objects.filter(pk=order.pk, status=previous, attention=Order.Attention.LATE_PAYMENT)
    if not failed:
        if mine.update(status=Order.Status.PAID, paid_at=now, attention=""):
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


def _confirmation_task():
    from billing.tasks import order_confirmation_send_task

    return order_confirmation_send_task


def tickets_issue(*, order: Order) -> list[Ticket]:
    """One ticket per seat of a paid order; creating the missing ones only, so calling it again is harmless."""
    existing = {t.seat: t for t in Ticket.objects.filter(order_id=order.pk)}
    prices = {line["ticket_type"]: line["unit_price"] for line in order.lines}
    missing = [
        Ticket(
            tenant_id=order.tenant_id,
            event_id=order.event_id,
            order_id=order.pk,
            ticket_type_id=attendee["ticket_type"],
            seat=seat,
            attendee_name=attendee.get("name", ""),
            price=prices[attendee["ticket_type"]],
            currency=order.currency,
        )
        for seat, attendee in enumerate(order.attendees, start=1)
        if seat not in existing
    ]
    if missing:
        try:
            with atomic():
                Ticket.objects.bulk_create(missing)
        except Exception as exc:  # a failed MongoDB commit raises pymongo's error, not a DatabaseError
            # Another delivery is issuing this order's tickets at the same moment: SQL
            # reports the seats it took (IntegrityError), a MongoDB transaction that
            # touched them first aborts with WriteConflict. Either way add the seats one
            # by one; each insert waits for the other writer, and the unique (order, seat)
            # index keeps the seats it stored.
            if not (isinstance(exc, IntegrityError) or is_transient_transaction_error(exc)):
                raise
            for ticket in missing:
                try:
                    with transaction.atomic():  # a savepoint on PostgreSQL; a plain insert on MongoDB
                        ticket.save(force_insert=True)
                except IntegrityError:
                    pass
    return list(Ticket.objects.filter(order_id=order.pk).order_by("seat"))


def order_review_accept(*, order: Order, acting_user) -> Order:
    """The organizer accepts a payment whose amount differed: the held seats are sold and tickets issued."""
    if not Order.objects.filter(pk=order.pk, status=Order.Status.NEEDS_REVIEW).update(
        status=Order.Status.PAID, paid_at=order.paid_at or timezone.now()
    ):
        raise ValidationError(_("Only an order that needs review can be accepted."))
    for line in order.lines:
        events_services.seats_sell_reserved(ticket_type_id=line["ticket_type"], quantity=line["quantity"])
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
    _refunds_apply(order)
    order.refresh_from_db()
    enqueue_on_commit(_confirmation_task(), order_id=str(order.pk))
    return order


def order_confirmation_resend(*, order: Order, acting_user) -> None:
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


# --- Refunds --------------------------------------------------------------------------


REFUNDABLE = {Order.Status.PAID, Order.Status.PARTIALLY_REFUNDED, Order.Status.REFUND_DUE, Order.Status.NEEDS_REVIEW}


def order_refund(*, order: Order, acting_user, amount: int | None = None) -> Order:
    """Refund (part of) what the buyer paid, through Stripe; voids the tickets the refund covers."""
    order.refresh_from_db()
    if order.status not in REFUNDABLE or order.refundable_amount <= 0:
        raise ValidationError({"amount": _("This order has nothing left to refund.")})
    amount = order.refundable_amount if amount is None else amount
    if not 0 < amount <= order.refundable_amount:
        raise ValidationError(
            {
                "amount": _("Refund between 0.01 and %(max)s.")
                % {"max": money_format(order.refundable_amount, order.currency)}
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
    _refund_book(order=order, refund=refund, acting_user=acting_user)
    _amounts_sync(order)
    _refunds_apply(order)
    order.refresh_from_db()
    return order


def _refund_book(*, order: Order, refund: dict, acting_user=None, by_stripe: bool = False) -> bool:
    """Book one Stripe refund in the ledger and the audit log, once (unique on the refund id)."""
    booked = _ledger_book(
        order=order,
        kind=LedgerEntry.Kind.REFUND,
        amount=refund["amount"],
        currency=refund["currency"],
        stripe_object_id=refund["id"],
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
                "by": "stripe" if by_stripe else "organizer",
            },
        )
    return booked


def order_refunds_sync(*, order: Order) -> Order:
    """Stripe says the charge was refunded (maybe from its dashboard): book every refund it knows, then apply."""
    for refund in payments.refunds_list(payment_intent_id=order.stripe_payment_intent_id):
        _refund_book(order=order, refund=refund, by_stripe=True)
    _amounts_sync(order)
    _refunds_apply(order)
    order.refresh_from_db()
    return order


def _refunds_apply(order: Order) -> None:
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
        if ticket_void(ticket=ticket):
            covered += ticket.price


def ticket_void(*, ticket: Ticket, acting_user=None) -> bool:
    """valid -> void, once; the seat goes back on sale."""
    if not Ticket.objects.filter(pk=ticket.pk, status=Ticket.Status.VALID).update(
        status=Ticket.Status.VOID, voided_at=timezone.now()
    ):
        return False
    events_services.seats_unsell(ticket_type_id=ticket.ticket_type_id, quantity=1)
    ticket.status = Ticket.Status.VOID
    audit_log_record(
        action="ticket.voided",
        tenant_id=ticket.tenant_id,
        event_id=ticket.event_id,
        actor_user=acting_user,
        object_id=ticket.pk,
    )
    return True


# --- Check-in ---------------------------------------------------------------------------


@dataclass
class CheckInResult:
    result: str  # valid | already_checked_in | void | wrong_event | unknown
    ticket: Ticket | None = None
    checked_in_at: object = None


def ticket_check_in(*, event: Event, code: str, acting_user) -> CheckInResult:
    """Scan or typed code -> one answer. Two scans at the same moment: exactly one is "valid"."""
    code = normalize_code(code)
    ticket = Ticket.objects.filter(code=code, tenant_id=event.tenant_id).select_related("ticket_type").first()
    if ticket is None:
        # Another organization's ticket is as unknown as a made-up code.
        return CheckInResult("unknown")
    if ticket.event_id != event.pk:
        return CheckInResult("wrong_event", ticket)
    if not ticket.is_valid:
        return CheckInResult("void", ticket)
    now = now_as_stored()  # the first scan answers with the time every later scan reads back
    if Ticket.objects.filter(pk=ticket.pk, status=Ticket.Status.VALID, checked_in_at__isnull=True).update(
        checked_in_at=now, checked_in_by=acting_user
    ):
        ticket.checked_in_at = now
        audit_log_record(
            action="ticket.checked_in",
            tenant_id=event.tenant_id,
            event_id=event.pk,
            actor_user=acting_user,
            object_id=ticket.pk,
        )
        return CheckInResult("valid", ticket, now)
    ticket.refresh_from_db(fields=["status", "checked_in_at"])
    if not ticket.is_valid:
        return CheckInResult("void", ticket)
    return CheckInResult("already_checked_in", ticket, ticket.checked_in_at)


# --- Webhooks ---------------------------------------------------------------------------


def webhook_receive(*, payload: bytes, signature: str) -> tuple[WebhookEvent, bool]:
    """Verify, store once, enqueue processing. Returns (event row, whether it was new).

    Raises stripe.SignatureVerificationError or ValueError for anything that is
    not a recent event signed with our secret; nothing is stored then.
    """
    event = payments.event_verify(payload=payload, signature=signature)
    row, created = WebhookEvent.objects.get_or_create(
        stripe_event_id=event["id"],
        defaults={
            "type": event.get("type", ""),
            "payload": event,
            "is_test": str(event["id"]).startswith(f"evt_{payments.TEST_ID_PREFIX}"),
        },
    )
    if created:
        from billing.tasks import webhook_event_process_task

        enqueue_on_commit(webhook_event_process_task, webhook_event_id=str(row.pk))
    return row, created


def _uuid_or_none(value) -> uuid.UUID | None:
    try:
        return uuid.UUID(str(value))
    except (TypeError, ValueError):
        return None


def _order_for_session(session: dict) -> Order | None:
    """Our order for a Checkout Session, checked against the ids we gave Stripe (the payload is only a trigger)."""
    metadata = session.get("metadata") or {}
    order_id = _uuid_or_none(metadata.get("order_id") or session.get("client_reference_id"))
    tenant_id, event_id = _uuid_or_none(metadata.get("tenant_id")), _uuid_or_none(metadata.get("event_id"))
    if not (order_id and tenant_id and event_id):
        return None
    order = Order.objects.filter(pk=order_id, tenant_id=tenant_id, event_id=event_id).first()
    if order is None or (order.stripe_session_id and order.stripe_session_id != session.get("id")):
        return None
    return order


def _on_session_paid(session: dict) -> Order | None:
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


def _on_session_failed(session: dict) -> Order | None:
    order = _order_for_session(session)
    if order is not None:
        order_close(order=order, to=Order.Status.CANCELLED, reason="payment_failed")
    return order


def _on_session_expired(session: dict) -> Order | None:
    order = _order_for_session(session)
    if order is not None:
        order_close(order=order, to=Order.Status.EXPIRED, reason="checkout_expired")
    return order


def _on_charge_refunded(charge: dict) -> Order | None:
    payment_intent = charge.get("payment_intent")
    if not payment_intent:
        return None
    order = Order.objects.filter(stripe_payment_intent_id=payment_intent).first()
    if order is None:
        metadata = charge.get("metadata") or {}
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
    WebhookEvent.objects.filter(pk=webhook_event.pk).update(attempts=F("attempts") + 1)
    handler = WEBHOOK_HANDLERS.get(webhook_event.type)
    obj = (webhook_event.payload.get("data") or {}).get("object") or {}
    try:
        order = handler(obj) if handler else None
    except Exception as exc:
        WebhookEvent.objects.filter(pk=webhook_event.pk).exclude(status=WebhookEvent.Status.PROCESSED).update(
            status=WebhookEvent.Status.FAILED, error=f"{type(exc).__name__}: {exc}"
        )
        raise
    status = WebhookEvent.Status.PROCESSED if order is not None else WebhookEvent.Status.IGNORED
    WebhookEvent.objects.filter(pk=webhook_event.pk).exclude(status=status).update(
        status=status,
        processed_at=timezone.now(),
        error="",
        tenant_id=order.tenant_id if order is not None else None,
        order_id=order.pk if order is not None else None,
    )
    webhook_event.refresh_from_db()
    return webhook_event


def webhook_events_requeue_stale(*, older_than_seconds: int = 300) -> int:
    """Send again events stored but never processed (the enqueue failed, or the worker died)."""
    from billing.tasks import webhook_event_process_task

    cutoff = timezone.now() - timedelta(seconds=older_than_seconds)
    stale = WebhookEvent.objects.filter(
        status__in=[WebhookEvent.Status.RECEIVED, WebhookEvent.Status.FAILED], received_at__lte=cutoff, attempts__lt=10
    ).values_list("pk", flat=True)[:500]
    count = 0
    for pk in stale:
        enqueue_on_commit(webhook_event_process_task, webhook_event_id=str(pk))
        count += 1
    return count


def order_simulate_payment(*, order: Order, paid: bool = True) -> WebhookEvent:
    """Test-payment mode: pay (or abandon) the order through a locally signed event and the normal webhook path."""
    event_type = "checkout.session.completed" if paid else "checkout.session.expired"
    payload, signature = payments.simulated_payment_event(order=order, event_type=event_type)
    row, _created = webhook_receive(payload=payload, signature=signature)
    return row  # processed by the task once the transaction commits
