"""Checkout: the buyer's order, its seats held while they pay, and its pages."""

import copy
import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import transaction
from django.urls import reverse
from django.utils import timezone
from django.utils.translation import gettext as _

from billing import payments, selectors
from billing.checkout_terms import checkout_terms
from billing.models import Order, WaitlistEntry
from billing.services.fees import application_fee_for, platform_fee_rate
from billing.services.orders import order_close, order_free_complete
from billing.services.seats import order_lines_reserve
from billing.services.waitlist import waitlist_claim, waitlist_claim_undo
from events import services as events_services
from events.models import Event, TicketType
from eventsaas.services import audit_log_record
from eventsaas.validators import validate_no_control_characters

logger = logging.getLogger(__name__)


MAX_TICKETS_PER_ORDER = 100


class SoldOut(Exception):
    """Some requested ticket types do not have enough seats left; nothing was reserved."""

    def __init__(self, ticket_types: list[TicketType]):
        super().__init__(", ".join(t.name for t in ticket_types))
        self.ticket_types = ticket_types


class PaymentsUnavailable(Exception):
    """No way to take payments right now (not configured, or the provider failed); nothing was charged."""


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
    answers: dict[str, Any] = field(default_factory=dict)
    access_code: str = ""
    language: str = "en"


@dataclass(frozen=True)
class _CheckedLines:
    """A checkout request's lines, checked against its ticket types as read (or as kept)."""

    lines: list[dict[str, Any]]
    attendees: list[dict[str, str]]
    account_id: str | None  # the Stripe account paid lines are charged to; None when all are free
    ticket_types: dict[str, TicketType]  # by id, as read or kept (billing/checkout_terms.py)
    counters_current: bool  # the types' seat counters were read for this checkout

    def sold_out_when_read(self) -> list[TicketType]:
        """The types that had fewer seats left than asked for when they were read.

        Answering sold out from this read is exact, not a guess: it is the answer the
        reservation would have given at that moment (a rush's late buyers are answered
        without a write). Enough seats when read proves nothing: the reservation decides.
        Kept types' counters are not this checkout's: then the reservation decides alone.
        """
        if not self.counters_current:
            return []
        return [
            self.ticket_types[line["ticket_type"]]
            for line in self.lines
            if self.ticket_types[line["ticket_type"]].remaining < line["quantity"]
        ]

    def refused_by_reservation(self, failed: list[str]) -> list[TicketType]:
        """The types the reservation refused, with the seats they have left.

        A refused single seat leaves none (the conditional update found sold + reserved >= capacity), so a
        rush's late buyers need no read for it; for more seats asked the counters are read now.
        """
        asked = {line["ticket_type"]: line["quantity"] for line in self.lines}
        if all(asked[type_id] == 1 for type_id in failed):
            return [self.ticket_types[type_id].shown_sold_out() for type_id in failed]
        return list(TicketType.objects.filter(pk__in=failed))


def _checkout_lines(*, event: Event, request: CheckoutRequest, at: datetime) -> _CheckedLines:
    """Validated order lines and attendees, and the account paid lines are charged to; or a ValidationError
    with field messages."""
    wanted: dict[str, int] = {}
    for item in request.items:
        if item.quantity < 0:
            raise ValidationError({"items": _("Quantities cannot be negative.")})
        if item.quantity:
            wanted[str(item.ticket_type_id)] = wanted.get(str(item.ticket_type_id), 0) + item.quantity
    if not wanted:
        raise ValidationError({"items": _("Choose at least one ticket.")})
    terms = checkout_terms(event=event)
    # Copies: this checkout may change them in memory (held back for a waitlist, shown sold out).
    types = {type_id: copy.copy(terms.ticket_types[type_id]) for type_id in wanted if type_id in terms.ticket_types}

    def may_have_seats(type_id: str) -> bool:
        return not terms.counters_current or types[type_id].remaining >= wanted[type_id]

    lines: list[dict[str, Any]] = []
    errors: list[str] = []
    # Paid tickets go on sale once the organization's Stripe account can take charges; free ones always can.
    # Read once: the order goes to the account that was checked. Not read when no paid type asked for had
    # the seats when read: that checkout is answered sold out whatever the account (a rush's late buyers).
    account_id = (
        terms.account_id() if any(t.price > 0 and may_have_seats(type_id) for type_id, t in types.items()) else None
    )
    takes_charges = account_id is not None
    for type_id, quantity in wanted.items():
        ticket_type = types.get(type_id)
        hidden = ticket_type is None or (
            ticket_type.access_code and ticket_type.access_code != request.access_code.strip()
        )
        if ticket_type is None or hidden:
            errors.append(_("This ticket type is not on sale for this event."))
            continue
        if not ticket_type.is_in_sales_window(at):
            errors.append(_("“%(name)s” is not on sale now.") % {"name": ticket_type.name})
            continue
        if ticket_type.price > 0 and not takes_charges and may_have_seats(type_id):
            errors.append(
                _("“%(name)s” is not on sale yet: the organizer cannot take payments yet.") % {"name": ticket_type.name}
            )
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
    for name in names:  # names on tickets, and the buyer's becomes a guest's name (billing.services.holders)
        try:
            validate_no_control_characters(name)
        except ValidationError as exc:
            raise ValidationError({"attendees": exc.messages}) from None
    attendees: list[dict[str, str]] = []
    for line in lines:
        for _seat in range(line["quantity"]):
            attendees.append({"ticket_type": line["ticket_type"], "name": names[len(attendees)] if names else ""})
    return _CheckedLines(
        lines=lines,
        attendees=attendees,
        account_id=account_id,
        ticket_types=types,
        counters_current=terms.counters_current,
    )


def _buyer_clean(request: CheckoutRequest) -> Order:
    """The buyer's name and email checked (field messages); an unsaved Order carrying just those two."""
    buyer = Order(buyer_name=request.buyer_name.strip(), buyer_email=request.buyer_email.strip())
    buyer_errors: dict[str, str | list[str]] = {}
    if not buyer.buyer_name:
        buyer_errors["buyer_name"] = _("Enter your name.")
    try:
        validate_no_control_characters(buyer.buyer_name)
    except ValidationError as exc:
        buyer_errors["buyer_name"] = exc.messages
    try:
        Order._meta.get_field("buyer_email").run_validators(buyer.buyer_email)
        if not buyer.buyer_email:
            raise ValidationError(_("Enter your email address."))
    except ValidationError as exc:
        buyer_errors["buyer_email"] = exc.messages
    if buyer_errors:
        raise ValidationError(buyer_errors)
    return buyer


def _order_store_with_session(
    *,
    order: Order,
    event: Event,
    lines: list[dict[str, Any]],
    success_url: str,
    cancel_url: str,
    before_release: Callable[[], None] | None = None,
) -> tuple[str, str]:
    """Insert the pending order and create its Checkout Session: (session id, url). On any failure the
    held seats go back (through the order's arrow once it exists) and the error is raised.

    `before_release` runs first on failure: a waitlist offer's entry must be back in line before its
    seat is freed, because freeing it offers it at once to whoever is first then (on MongoDB, and on SQL
    outside a transaction, on_commit runs at once)."""
    try:
        order.save(force_insert=True)
        return payments.checkout_session_create(
            order=order,
            event=event,
            success_url=success_url or _absolute(order_page_path(order)) + "?paid=1",
            cancel_url=cancel_url or _absolute(order_cancel_path(order)),
        )
    except Exception as exc:
        if before_release is not None:
            before_release()
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


def checkout_start(*, event: Event, request: CheckoutRequest, success_url: str = "", cancel_url: str = "") -> Order:
    """Reserve the seats, create a pending order and its Checkout Session.

    Raises ValidationError (bad input, field messages), SoldOut (which types lack
    seats; nothing reserved) or PaymentsUnavailable (nothing reserved or charged).
    `success_url`/`cancel_url` are absolute; by default the order and cancel pages.
    """
    if not event.is_on_sale or not event.tenant.is_verified:
        raise ValidationError({"items": _("Tickets for this event are not on sale.")})
    mode = payments.payment_mode()
    now = timezone.now()
    checked = _checkout_lines(event=event, request=request, at=now)
    lines = checked.lines
    total = sum(line["quantity"] * line["unit_price"] for line in lines)
    if mode == "off" and total:
        raise PaymentsUnavailable(_("Ticket sales are not open yet: payments are not configured."))
    buyer = _buyer_clean(request)
    answers = events_services.event_answers_clean(event=event, answers=request.answers)

    if sold_out := checked.sold_out_when_read():
        raise SoldOut(sold_out)
    # Seats freed while people wait are theirs: the public cannot buy past the waitlist (docs/waitlist.md).
    held_back = selectors.waitlist_waiting_type_ids(
        ticket_types=[checked.ticket_types[line["ticket_type"]] for line in lines]
    )
    if held_back:
        raise SoldOut([checked.ticket_types[str(type_id)].hold_back_for_waitlist() for type_id in held_back])
    failed = order_lines_reserve(lines)
    if failed:
        raise SoldOut(checked.refused_by_reservation(failed))
    order = _order_build(
        event=event, request=request, lines=lines, attendees=checked.attendees, account_id=checked.account_id,
        buyer=buyer, answers=answers, at=now,
    )  # fmt: skip
    return _order_open(order=order, event=event, lines=lines, success_url=success_url, cancel_url=cancel_url)


def checkout_start_from_offer(
    *, entry: WaitlistEntry, token: str, request: CheckoutRequest, success_url: str = "", cancel_url: str = ""
) -> Order:
    """Checkout for a waitlist offer: one seat of the offered type, paid with the seat the offer holds.

    The entry's offered -> claimed compare-and-set hands the held seat to the new order (which releases
    it through its own arrows if unpaid), so an offer buys one order at most. Raises ValidationError
    (bad input, or the offer is no longer live: field "offer") or PaymentsUnavailable.
    """
    event = entry.event
    if not event.is_on_sale or not event.tenant.is_verified:
        raise ValidationError({"items": _("Tickets for this event are not on sale.")})
    if payments.payment_mode() == "off" and entry.ticket_type.price:
        raise PaymentsUnavailable(_("Ticket sales are not open yet: payments are not configured."))
    now = timezone.now()
    if entry.status != WaitlistEntry.Status.OFFERED or not entry.offer_expires_at or entry.offer_expires_at <= now:
        raise ValidationError({"offer": _("This offer has expired or was already used.")})
    request.items = [CheckoutItem(ticket_type_id=str(entry.ticket_type_id), quantity=1)]
    request.buyer_email = entry.email
    request.access_code = entry.ticket_type.access_code
    if event.attendee_names_required and not request.attendee_names:
        request.attendee_names = [request.buyer_name]  # one seat: the buyer's own ticket
    checked = _checkout_lines(event=event, request=request, at=now)
    lines = checked.lines
    buyer = _buyer_clean(request)
    answers = events_services.event_answers_clean(event=event, answers=request.answers)
    # No sold-out check: the offer holds its seat (counted in `reserved`).
    order = _order_build(
        event=event, request=request, lines=lines, attendees=checked.attendees, account_id=checked.account_id,
        buyer=buyer, answers=answers, at=now,
    )  # fmt: skip
    if not waitlist_claim(entry=entry, token=token, order_id=order.pk):
        raise ValidationError({"offer": _("This offer has expired or was already used.")})

    def back_in_line() -> None:
        # The entry keeps its place, so the seat the failed order gives back is offered to it again
        # (and not to the next in line). Idempotent: a compare-and-set on the claim.
        waitlist_claim_undo(entry=entry, order_id=order.pk)

    try:
        return _order_open(
            order=order,
            event=event,
            lines=lines,
            success_url=success_url,
            cancel_url=cancel_url,
            before_release=back_in_line,
        )
    except Exception:
        back_in_line()
        raise


def _order_build(
    *,
    event: Event,
    request: CheckoutRequest,
    lines: list[dict[str, Any]],
    attendees: list[dict[str, str]],
    account_id: str | None,
    buyer: Order,
    answers: dict[str, Any],
    at: datetime,
) -> Order:
    """The unsaved pending order for lines whose seats are reserved."""
    hold = timedelta(minutes=settings.ORDER_HOLD_MINUTES)
    total = sum(line["quantity"] * line["unit_price"] for line in lines)
    # Fixed now, for the order's life: the destination of the charge and the platform's fee on it. Without
    # an account that can take charges the platform keeps the whole charge, and takes no fee of its own.
    account_id = account_id if total else None  # a free order has no destination
    return Order(
        tenant_id=event.tenant_id,
        event_id=event.pk,
        buyer_name=buyer.buyer_name,
        buyer_email=buyer.buyer_email,
        lines=[{k: v for k, v in line.items() if k != "currency"} for line in lines],
        attendees=attendees,
        dietary=request.dietary.strip()[:2000],
        answers=answers,
        total=total,
        currency=lines[0]["currency"],
        stripe_account_id=account_id or "",
        application_fee=(
            application_fee_for(total=total, rate=platform_fee_rate(tenant=event.tenant)) if account_id else 0
        ),
        # A free registration takes no payment, real or test.
        is_test=payments.payment_mode() == "test" and total > 0,
        language=request.language,
        created_at=at,
        expires_at=at + hold,
    )


def _order_open(
    *,
    order: Order,
    event: Event,
    lines: list[dict[str, Any]],
    success_url: str,
    cancel_url: str,
    before_release: Callable[[], None] | None = None,
) -> Order:
    """Store the order and its Checkout Session, or complete a free one (the seats are reserved already)."""
    if not order.total:
        return _order_register_free(order=order, lines=lines, before_release=before_release)
    session_id, url = _order_store_with_session(
        order=order,
        event=event,
        lines=lines,
        success_url=success_url,
        cancel_url=cancel_url,
        before_release=before_release,
    )
    order.stripe_session_id = session_id
    order.checkout_url = url or _absolute(test_checkout_path(order))
    # One commit for the two (speed only: each stands alone, as on MongoDB, where atomic() is a no-op).
    with transaction.atomic():
        Order.objects.filter(pk=order.pk).update(stripe_session_id=session_id, checkout_url=order.checkout_url)
        audit_log_record(
            action="order.created",
            tenant_id=event.tenant_id,
            event_id=event.pk,
            object_id=order.pk,
            data={
                "total": order.total,
                "currency": order.currency,
                "quantity": order.quantity,
                "test": order.is_test,
                "application_fee": order.application_fee,
                "destination": order.stripe_account_id,
            },
        )
    return order


def _order_register_free(
    *, order: Order, lines: list[dict[str, Any]], before_release: Callable[[], None] | None = None
) -> Order:
    """A free order (total 0): stored pending with its seats held, then paid at once, without Stripe.

    The same arrows as a paid order: the reserve above capped it (one compare-and-set
    per type), and order_free_complete's pending -> paid sells the held seats, issues
    the tickets (the buyer becomes a guest) and emails them. Should this process stop
    in between, the pending order expires with the sweep and gives its seats back.
    """
    try:
        order.save(force_insert=True)
    except Exception:
        if before_release is not None:
            before_release()
        for line in lines:
            events_services.seats_release(ticket_type_id=line["ticket_type"], quantity=line["quantity"])
        raise
    audit_log_record(
        action="order.created",
        tenant_id=order.tenant_id,
        event_id=order.event_id,
        object_id=order.pk,
        data={"total": 0, "currency": order.currency, "quantity": order.quantity, "free": True},
    )
    return order_free_complete(order=order)


def _absolute(path: str) -> str:
    return settings.SITE_URL + path


def order_page_path(order: Order) -> str:
    return reverse("billing:order", kwargs={"order_id": order.pk, "token": order.access_token})


def order_cancel_path(order: Order) -> str:
    return reverse("billing:order-cancel", kwargs={"order_id": order.pk, "token": order.access_token})


def test_checkout_path(order: Order) -> str:
    return reverse("billing:test-checkout", kwargs={"order_id": order.pk, "token": order.access_token})


def waitlist_entry_path(entry: WaitlistEntry) -> str:
    """The entry's page for whoever joined, for the entry's whole life: its place in line, its offer's
    state, the way out. It cannot buy an offered seat: that takes `waitlist_offer_path`."""
    return reverse("billing:waitlist-entry", kwargs={"entry_id": entry.pk, "token": entry.token})


def waitlist_offer_path(entry: WaitlistEntry) -> str:
    """The same page through the current offer's emailed link: it can also buy the held seat."""
    return reverse("billing:waitlist-entry", kwargs={"entry_id": entry.pk, "token": entry.offer_token})
