"""The money ledger: each Stripe payment or refund booked once (unique per Stripe object and kind).

A payment books the gross amount and the platform's fee taken with it; a refund books the amount given
back and the part of the fee given back with it (billing/services/fees.py). The organizer's net is amount - fee.
"""

from django.db import IntegrityError
from django.db.models import F
from django.db.models.functions import Greatest

from billing.models import LedgerEntry, Order
from eventsaas.db import unique_insert


def ledger_book(*, order: Order, kind: str, amount: int, currency: str, stripe_object_id: str, fee: int = 0) -> bool:
    """Book a payment or refund (and the platform fee taken or given back with it) once; False if booked already."""
    if not 0 <= fee <= amount:
        raise ValueError(f"A fee of {fee} does not fit an entry of {amount}.")
    try:
        with unique_insert():
            LedgerEntry.objects.create(
                tenant_id=order.tenant_id,
                event_id=order.event_id,
                order_id=order.pk,
                kind=kind,
                amount=amount,
                fee=fee,
                currency=currency,
                stripe_object_id=stripe_object_id,
            )
    except IntegrityError:
        return False
    return True


def ledger_totals(order: Order) -> tuple[int, int]:
    """(paid, refunded) booked for the order. Its few entries are summed here: Django builds an aggregate
    query at about twice the cost of this plain read, on every payment's path (bench/ticket_rush.py)."""
    totals: dict[str, int] = {LedgerEntry.Kind.PAYMENT: 0, LedgerEntry.Kind.REFUND: 0}
    for kind, amount in LedgerEntry.objects.filter(order_id=order.pk).values_list("kind", "amount"):
        totals[kind] += amount
    return totals[LedgerEntry.Kind.PAYMENT], totals[LedgerEntry.Kind.REFUND]


def order_amounts_sync(order: Order) -> None:
    """Copy the ledger's totals onto the order; Greatest keeps a late, stale reader from moving them back."""
    paid, refunded = ledger_totals(order)
    Order.objects.filter(pk=order.pk).update(
        paid_amount=Greatest(F("paid_amount"), paid), refunded_amount=Greatest(F("refunded_amount"), refunded)
    )
    order.paid_amount = max(order.paid_amount, paid)
    order.refunded_amount = max(order.refunded_amount, refunded)


def order_fee_taken(order: Order, *, charged: int) -> int:
    """The platform's fee on a payment of `charged`: the order's application fee, never more than the payment."""
    return min(order.application_fee, charged) if order.stripe_account_id else 0
