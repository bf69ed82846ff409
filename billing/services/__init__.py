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

One module per concern: checkout, connect (organizations' Stripe accounts),
orders (the status arrows, payments, tickets), refunds, checkin,
webhooks, and their helpers seats (an order's lines against events' seat counters), ledger and fees
(the platform's application fee and its proportional refund).
The names below are the package's interface for views, APIs and tasks.
"""

from billing.services.checkin import (
    CheckInResult,
    ticket_check_in,
)
from billing.services.checkout import (
    MAX_TICKETS_PER_ORDER,
    CheckoutItem,
    CheckoutRequest,
    PaymentsUnavailable,
    SoldOut,
    checkout_start,
    checkout_start_from_offer,
    order_cancel_path,
    order_page_path,
    test_checkout_path,
    waitlist_entry_path,
    waitlist_offer_path,
)
from billing.services.connect import (
    CONNECT_WEBHOOK_HANDLERS,
    connect_onboarding_resume,
    connect_onboarding_start,
    connected_account_deauthorize,
    connected_account_ensure,
    connected_account_sync,
)
from billing.services.fees import (
    FeeRate,
    application_fee_for,
    fee_refund_for,
    platform_fee_rate,
)
from billing.services.orders import (
    order_cancel_by_buyer,
    order_close,
    order_confirmation_resend,
    order_free_complete,
    order_payment_record,
    order_review_accept,
    orders_expire_due,
    tickets_issue,
)
from billing.services.refunds import (
    REFUNDABLE,
    order_refund,
    order_refunds_sync,
    refunds_apply,
    ticket_void,
)
from billing.services.waitlist import (
    waitlist_is_open,
    waitlist_join,
    waitlist_leave,
    waitlist_offer_next,
    waitlist_offers_expire_due,
    waitlist_sweep,
)
from billing.services.webhooks import (
    WEBHOOK_HANDLERS,
    connect_simulate_onboarding,
    connect_webhook_receive,
    order_simulate_payment,
    webhook_event_process,
    webhook_events_requeue_stale,
    webhook_receive,
)

__all__ = [
    "CONNECT_WEBHOOK_HANDLERS",
    "CheckInResult",
    "CheckoutItem",
    "CheckoutRequest",
    "FeeRate",
    "MAX_TICKETS_PER_ORDER",
    "PaymentsUnavailable",
    "REFUNDABLE",
    "SoldOut",
    "WEBHOOK_HANDLERS",
    "application_fee_for",
    "checkout_start",
    "checkout_start_from_offer",
    "connect_onboarding_resume",
    "connect_onboarding_start",
    "connect_simulate_onboarding",
    "connect_webhook_receive",
    "connected_account_deauthorize",
    "connected_account_ensure",
    "connected_account_sync",
    "fee_refund_for",
    "order_cancel_by_buyer",
    "order_cancel_path",
    "order_close",
    "order_confirmation_resend",
    "order_free_complete",
    "order_page_path",
    "order_payment_record",
    "order_refund",
    "order_refunds_sync",
    "order_review_accept",
    "order_simulate_payment",
    "orders_expire_due",
    "platform_fee_rate",
    "refunds_apply",
    "test_checkout_path",
    "ticket_check_in",
    "ticket_void",
    "tickets_issue",
    "waitlist_entry_path",
    "waitlist_offer_path",
    "waitlist_is_open",
    "waitlist_join",
    "waitlist_leave",
    "waitlist_offer_next",
    "waitlist_offers_expire_due",
    "waitlist_sweep",
    "webhook_event_process",
    "webhook_events_requeue_stale",
    "webhook_receive",
]
