"""Orders, tickets, Stripe webhook events and the money ledger of ticketed events.

Document-store shapes on purpose (docs/mongodb.md): an order embeds its lines
and attendees, every row carries tenant_id and event_id, and each invariant is
a compare-and-set on one row or a unique constraint (../shared/DESIGN.md).
"""

import secrets
import uuid

from django.conf import settings
from django.db import models
from django.db.models import Q
from django.utils import timezone
from django.utils.translation import gettext_lazy as _

from events.models import Event, TicketType
from eventsaas.fields import MillisecondDateTimeField
from eventsaas.models import TenantScopedQuerySet
from guests.codes import CODE_ALPHABET
from guests.models import Guest
from tenants.models import Tenant


def new_secret() -> str:
    """An unguessable token for the buyer's links (128 bits, URL-safe)."""
    return secrets.token_urlsafe(16)


TICKET_CODE_LENGTH = 16


def new_ticket_code() -> str:
    """16 characters of the guest-code alphabet (no look-alikes): about 79 bits, and typeable at the door."""
    return "".join(secrets.choice(CODE_ALPHABET) for _ in range(TICKET_CODE_LENGTH))


class Order(models.Model):
    """A buyer's order. `lines` is [{"ticket_type": id, "name", "quantity", "unit_price"}].

    Status arrows (DESIGN.md "Orders") are single compare-and-set updates in
    billing.services; seats are released by whichever arrow leaves `pending`.
    """

    class Status(models.TextChoices):
        PENDING = "pending", _("Awaiting payment")
        PAID = "paid", _("Paid")
        PARTIALLY_REFUNDED = "partially_refunded", _("Partially refunded")
        REFUNDED = "refunded", _("Refunded")
        EXPIRED = "expired", _("Expired")
        CANCELLED = "cancelled", _("Cancelled")
        # Money arrived but no tickets can be issued: the seats were gone after
        # the order expired, or Stripe reported another amount. The organizer decides.
        REFUND_DUE = "refund_due", _("Needs a refund")
        NEEDS_REVIEW = "needs_review", _("Needs review")

    class Attention(models.TextChoices):
        NONE = "", _("None")
        SEATS_GONE = "seats_gone", _("Paid after expiry; the seats were sold to others")
        AMOUNT_MISMATCH = "amount_mismatch", _("Stripe reported a different amount or currency")
        # A claim, held while one delivery of a late payment takes the seats again.
        LATE_PAYMENT = "late_payment", _("Paid after expiry; taking the seats again")

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    tenant = models.ForeignKey(Tenant, models.CASCADE, verbose_name=_("organization"), related_name="+", db_index=False)
    event = models.ForeignKey(Event, models.CASCADE, verbose_name=_("event"), related_name="orders", db_index=False)
    status = models.CharField(_("status"), max_length=20, choices=Status.choices, default=Status.PENDING)
    attention = models.CharField(_("attention"), max_length=20, choices=Attention.choices, blank=True)
    buyer_name = models.CharField(_("buyer name"), max_length=200)
    buyer_email = models.EmailField(_("buyer email"))
    lines = models.JSONField(_("lines"), default=list)
    # [{"ticket_type": id, "name": "..."}] one per seat, in seat order; names may be blank.
    attendees = models.JSONField(_("attendees"), default=list, blank=True)
    dietary = models.TextField(_("dietary needs"), blank=True)
    answers = models.JSONField(_("answers"), default=dict, blank=True)
    total = models.PositiveIntegerField(_("total (in cents)"))
    currency = models.CharField(_("currency"), max_length=3)
    # What Stripe captured and refunded, in minor units; the ledger holds the entries.
    paid_amount = models.PositiveIntegerField(_("paid (in cents)"), default=0)
    refunded_amount = models.PositiveIntegerField(_("refunded (in cents)"), default=0)
    is_test = models.BooleanField(_("test payment"), default=False)
    # Fixed at checkout (issue #17): the organization's connected account the charge's net goes to
    # (a destination charge), and the platform's application fee, in the order's minor units.
    stripe_account_id = models.CharField(_("connected account"), max_length=255, blank=True)
    application_fee = models.PositiveIntegerField(_("platform fee (in cents)"), default=0)
    stripe_session_id = models.CharField(_("Stripe Checkout session"), max_length=255, blank=True)
    stripe_payment_intent_id = models.CharField(_("Stripe payment"), max_length=255, blank=True)
    checkout_url = models.URLField(_("checkout address"), max_length=2000, blank=True)
    # The buyer's link to the order page (emailed); no account is needed.
    access_token = models.CharField(_("access token"), max_length=32, default=new_secret, editable=False)
    language = models.CharField(_("language"), max_length=10, default="en")
    created_at = MillisecondDateTimeField(_("created at"), default=timezone.now, editable=False)
    expires_at = MillisecondDateTimeField(_("expires at"))
    paid_at = MillisecondDateTimeField(_("paid at"), null=True, blank=True)
    closed_at = MillisecondDateTimeField(_("expired or cancelled at"), null=True, blank=True)
    # Set when the organizers were emailed that the order needs them (refund due, needs review).
    attention_notified_at = MillisecondDateTimeField(_("organizers notified at"), null=True, blank=True)
    confirmation_claimed_at = MillisecondDateTimeField(_("confirmation email claimed at"), null=True, blank=True)
    confirmation_sent_at = MillisecondDateTimeField(_("confirmation email sent at"), null=True, blank=True)
    # The buyer's email that the order expired or its payment failed: claimed (cleared if sending fails), then sent.
    closed_notice_claimed_at = MillisecondDateTimeField(_("closing email claimed at"), null=True, blank=True)
    closed_notified_at = MillisecondDateTimeField(_("buyer told of the closing at"), null=True, blank=True)

    objects = TenantScopedQuerySet.as_manager()

    class Meta:
        verbose_name = _("order")
        verbose_name_plural = _("orders")
        ordering = ["-created_at"]
        constraints = [
            # One order per Checkout session: a retried webhook finds, never forks, the order.
            models.UniqueConstraint(
                fields=["stripe_session_id"], condition=Q(stripe_session_id__gt=""), name="order_unique_stripe_session"
            ),
        ]
        indexes = [
            # The organizer's order list, newest first, optionally by status.
            models.Index(fields=["tenant", "event", "created_at"], name="order_event_created"),
            models.Index(fields=["tenant", "event", "status", "created_at"], name="order_event_status_created"),
            # The expiry sweep: pending orders past their time.
            models.Index(fields=["status", "expires_at"], name="order_status_expires"),
            # charge.refunded carries the payment intent, not the order.
            models.Index(fields=["stripe_payment_intent_id"], name="order_payment_intent"),
        ]

    def __str__(self):
        return f"{self.buyer_name} ({self.get_status_display()})"

    @property
    def quantity(self) -> int:
        return sum(line["quantity"] for line in self.lines)

    @property
    def refundable_amount(self) -> int:
        return max(self.paid_amount - self.refunded_amount, 0)

    @property
    def is_paid(self) -> bool:
        return self.status in {self.Status.PAID, self.Status.PARTIALLY_REFUNDED}

    @property
    def needs_attention(self) -> bool:
        """Money arrived but no tickets were issued: the organizer must refund or accept it."""
        return self.status in ATTENTION_STATUSES

    @property
    def holds_seats(self) -> bool:
        """Reserved (not yet sold) seats belong to the order in these states."""
        return self.status in {self.Status.PENDING, self.Status.NEEDS_REVIEW}


ATTENTION_STATUSES = (Order.Status.REFUND_DUE, Order.Status.NEEDS_REVIEW)


class Ticket(models.Model):
    """One seat of a paid order. Unique per (order, seat) so it is issued exactly once."""

    class Status(models.TextChoices):
        VALID = "valid", _("Valid")
        VOID = "void", _("Void")

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    tenant = models.ForeignKey(Tenant, models.CASCADE, verbose_name=_("organization"), related_name="+", db_index=False)
    event = models.ForeignKey(Event, models.CASCADE, verbose_name=_("event"), related_name="tickets", db_index=False)
    order = models.ForeignKey(Order, models.CASCADE, verbose_name=_("order"), related_name="tickets", db_index=False)
    ticket_type = models.ForeignKey(
        TicketType, models.PROTECT, verbose_name=_("ticket type"), related_name="tickets", db_index=False
    )
    seat = models.PositiveSmallIntegerField(_("seat in order"))
    code = models.CharField(_("code"), max_length=32, unique=True, default=new_ticket_code, editable=False)
    attendee_name = models.CharField(_("attendee"), max_length=200, blank=True)
    # The guest of the event holding this ticket (the order's buyer, see billing.services.holders):
    # set once when the ticket is issued. Kept if the organizer deletes that guest (then null).
    guest = models.ForeignKey(
        Guest, models.SET_NULL, verbose_name=_("guest"), null=True, blank=True, related_name="+", db_index=False
    )
    price = models.PositiveIntegerField(_("price (in cents)"))
    currency = models.CharField(_("currency"), max_length=3)
    status = models.CharField(_("status"), max_length=10, choices=Status.choices, default=Status.VALID)
    created_at = MillisecondDateTimeField(_("issued at"), default=timezone.now, editable=False)
    voided_at = MillisecondDateTimeField(_("voided at"), null=True, blank=True)
    checked_in_at = MillisecondDateTimeField(_("checked in at"), null=True, blank=True)
    checked_in_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        models.SET_NULL,
        verbose_name=_("checked in by"),
        null=True,
        blank=True,
        related_name="+",
        db_index=False,
    )

    objects = TenantScopedQuerySet.as_manager()

    class Meta:
        verbose_name = _("ticket")
        verbose_name_plural = _("tickets")
        ordering = ["order", "seat"]
        constraints = [models.UniqueConstraint(fields=["order", "seat"], name="ticket_unique_seat_per_order")]
        # Check-in looks tickets up by code (unique index); the dashboard counts by type.
        indexes = [
            models.Index(fields=["tenant", "event", "ticket_type", "status"], name="ticket_event_type_status"),
            # A guest's tickets (their page) and the count of their valid ones (their answer).
            models.Index(fields=["tenant", "event", "guest", "status"], name="ticket_event_guest_status"),
        ]

    def __str__(self):
        return f"{self.ticket_type_id} #{self.seat} ({self.order_id})"

    @property
    def is_valid(self) -> bool:
        return self.status == self.Status.VALID

    @property
    def display_code(self) -> str:
        """The code in groups of four, as printed: ABCD-EFGH-JKLM-NPQR (check-in accepts it either way)."""
        return "-".join(self.code[i : i + 4] for i in range(0, len(self.code), 4))


class LedgerEntry(models.Model):
    """Append-only money record. For an order: sum(payments) - sum(refunds) = captured - refunded at Stripe."""

    class Kind(models.TextChoices):
        PAYMENT = "payment", _("Payment")
        REFUND = "refund", _("Refund")

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    tenant = models.ForeignKey(Tenant, models.CASCADE, verbose_name=_("organization"), related_name="+", db_index=False)
    event = models.ForeignKey(Event, models.CASCADE, verbose_name=_("event"), related_name="+", db_index=False)
    order = models.ForeignKey(Order, models.CASCADE, verbose_name=_("order"), related_name="ledger", db_index=False)
    kind = models.CharField(_("kind"), max_length=10, choices=Kind.choices)
    amount = models.PositiveIntegerField(_("amount (in cents)"))
    # The platform's application fee taken with a payment, or the part of it given back with a refund
    # (Stripe refunds the fee in proportion). The organizer's net is amount - fee.
    fee = models.PositiveIntegerField(_("platform fee (in cents)"), default=0)
    currency = models.CharField(_("currency"), max_length=3)
    # The payment intent of a payment, the refund of a refund (test mode: a local id).
    stripe_object_id = models.CharField(_("Stripe id"), max_length=255)
    created_at = MillisecondDateTimeField(_("booked at"), default=timezone.now, editable=False)
    # A refund's email to the buyer: claimed (cleared if sending fails), then sent; one email per refund.
    buyer_notice_claimed_at = MillisecondDateTimeField(_("refund email claimed at"), null=True, blank=True)
    buyer_notified_at = MillisecondDateTimeField(_("buyer notified at"), null=True, blank=True)

    objects = TenantScopedQuerySet.as_manager()

    class Meta:
        verbose_name = _("ledger entry")
        verbose_name_plural = _("ledger")
        ordering = ["created_at"]
        constraints = [
            models.UniqueConstraint(fields=["stripe_object_id", "kind"], name="ledger_unique_stripe_object_kind")
        ]
        indexes = [
            models.Index(fields=["tenant", "event", "kind"], name="ledger_event_kind"),
            models.Index(fields=["order", "kind"], name="ledger_order_kind"),
        ]

    def __str__(self):
        return f"{self.kind} {self.amount} {self.currency}"

    @property
    def sign(self) -> int:
        """+1 for money in (a payment), -1 for money out (a refund)."""
        return 1 if self.kind == self.Kind.PAYMENT else -1

    @property
    def signed_amount(self) -> int:
        return self.sign * self.amount

    @property
    def net(self) -> int:
        """What the organizer keeps of this entry (a refund's net is what leaves the organizer's account)."""
        return self.amount - self.fee

    @property
    def signed_fee(self) -> int:
        """The platform fee this entry adds to (a payment) or takes from (a refund) what the platform keeps."""
        return self.sign * self.fee

    @property
    def signed_net(self) -> int:
        return self.sign * self.net


class ConnectedAccount(models.Model):
    """An organization's Stripe Connect (Express) account, mirrored from Connect webhooks (`account.updated`).

    One per organization. Paid ticket types go on sale only while `charges_enabled`.
    In test-payment mode the account is simulated (`is_test`), so the demo shows the whole path without keys.
    """

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    tenant = models.OneToOneField(
        Tenant, models.CASCADE, verbose_name=_("organization"), related_name="connected_account"
    )
    stripe_account_id = models.CharField(_("Stripe account"), max_length=255, unique=True)
    is_test = models.BooleanField(_("simulated (test payments)"), default=False)
    country = models.CharField(_("country"), max_length=2, blank=True)
    default_currency = models.CharField(_("default currency"), max_length=3, blank=True)
    details_submitted = models.BooleanField(_("details submitted"), default=False)
    charges_enabled = models.BooleanField(_("can take charges"), default=False)
    payouts_enabled = models.BooleanField(_("can receive payouts"), default=False)
    # Stripe's requirements.currently_due and disabled_reason, shown to the organizer as what is missing.
    requirements_due = models.JSONField(_("requirements due"), default=list, blank=True)
    disabled_reason = models.CharField(_("disabled reason"), max_length=100, blank=True)
    created_at = MillisecondDateTimeField(_("created at"), default=timezone.now, editable=False)
    # The `created` time of the newest account.updated applied: an older event arriving late never wins.
    synced_at = MillisecondDateTimeField(_("synced at"), null=True, blank=True)
    # Set by account.application.deauthorized: the organization disconnected the platform. An older
    # account.updated arriving later never turns charges back on; onboarding again makes a new account.
    deauthorized_at = MillisecondDateTimeField(_("disconnected at"), null=True, blank=True)

    objects = TenantScopedQuerySet.as_manager()

    class Meta:
        verbose_name = _("connected account")
        verbose_name_plural = _("connected accounts")
        ordering = ["-created_at"]

    def __str__(self):
        return self.stripe_account_id

    @property
    def is_usable(self) -> bool:
        """The account can be used now: still connected, and not a simulated one while real Stripe keys are set
        (a demo database switched to live payments must onboard a real account, not send Stripe a made-up id)."""
        return self.deauthorized_at is None and not self.is_simulated_under_real_keys

    @property
    def is_simulated_under_real_keys(self) -> bool:
        return self.is_test and bool(settings.STRIPE_SECRET_KEY)

    @property
    def state(self) -> str:
        """One word for the Payments page: simulated (test mode's, with real keys now), disconnected,
        details_missing, charges (can sell), payouts (and is paid out)."""
        if self.is_simulated_under_real_keys:
            return "simulated"
        if not self.is_usable:
            return "disconnected"
        if self.charges_enabled:
            return "payouts" if self.payouts_enabled else "charges"
        return "details_missing"


class WebhookEvent(models.Model):
    """A verified Stripe event, stored before it is processed; unique by Stripe's id."""

    class Status(models.TextChoices):
        RECEIVED = "received", _("Received")
        PROCESSED = "processed", _("Processed")
        IGNORED = "ignored", _("Ignored")
        FAILED = "failed", _("Failed")

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    stripe_event_id = models.CharField(_("Stripe event"), max_length=255, unique=True)
    type = models.CharField(_("type"), max_length=100)
    payload = models.JSONField(_("payload"))
    is_test = models.BooleanField(_("local test payment"), default=False)
    # Filled in when processing finds the order; null for events about nothing of ours.
    tenant = models.ForeignKey(
        Tenant, models.CASCADE, verbose_name=_("organization"), related_name="+", null=True, blank=True, db_index=False
    )
    order_id = models.UUIDField(_("order"), null=True, blank=True)
    status = models.CharField(_("status"), max_length=10, choices=Status.choices, default=Status.RECEIVED)
    attempts = models.PositiveSmallIntegerField(_("attempts"), default=0)
    error = models.TextField(_("error"), blank=True)
    received_at = MillisecondDateTimeField(_("received at"), default=timezone.now, editable=False)
    processed_at = MillisecondDateTimeField(_("processed at"), null=True, blank=True)

    class Meta:
        verbose_name = _("Stripe webhook event")
        verbose_name_plural = _("Stripe webhook events")
        ordering = ["-received_at"]
        # The admin's list and the sweep of events left unprocessed.
        indexes = [models.Index(fields=["status", "received_at"], name="webhookevent_status_received")]

    def __str__(self):
        return f"{self.type} {self.stripe_event_id}"


class WaitlistEntry(models.Model):
    """A buyer waiting for a seat of a sold-out ticket type; offered a held seat when one frees up.

    waiting -> offered (a seat reserved for them until `offer_expires_at`) -> claimed (an order took
    the held seat) | expired (the seat went back and on to the next) ; waiting|offered -> left.
    Every arrow is one compare-and-set on this row, paired with one seat compare-and-set on the
    ticket type (billing/services/waitlist.py), so a freed seat is offered once.
    """

    class Status(models.TextChoices):
        WAITING = "waiting", _("Waiting")
        OFFERED = "offered", _("Offered a seat")
        CLAIMED = "claimed", _("Took the offer")
        EXPIRED = "expired", _("Offer expired")
        LEFT = "left", _("Left the waitlist")

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    tenant = models.ForeignKey(Tenant, models.CASCADE, verbose_name=_("organization"), related_name="+", db_index=False)
    event = models.ForeignKey(Event, models.CASCADE, verbose_name=_("event"), related_name="+", db_index=False)
    ticket_type = models.ForeignKey(
        TicketType, models.CASCADE, verbose_name=_("ticket type"), related_name="+", db_index=False
    )
    email = models.EmailField(_("email"))
    name = models.CharField(_("name"), max_length=200, blank=True)
    language = models.CharField(_("language"), max_length=10, default="en")
    status = models.CharField(_("status"), max_length=10, choices=Status.choices, default=Status.WAITING)
    # The entry's page for whoever joined (the join's redirect, the API's `url`): its place, its offer's state,
    # the way out. Kept from joining to claimed/expired/left; a new one when the address joins again.
    token = models.CharField(_("access token"), max_length=32, default=new_secret, editable=False)
    # The offer email's link, new at each offer: the only link that can buy the held seat. Joining proves
    # nothing about the address, so the seat goes to whoever reads its mailbox, not to whoever typed it in.
    offer_token = models.CharField(_("offer token"), max_length=32, blank=True, default="", editable=False)
    # The place in line: the earliest waiting entry is offered first.
    created_at = MillisecondDateTimeField(_("joined at"), default=timezone.now)
    offered_at = MillisecondDateTimeField(_("offered at"), null=True, blank=True)
    offer_expires_at = MillisecondDateTimeField(_("offer expires at"), null=True, blank=True)
    closed_at = MillisecondDateTimeField(_("claimed, expired or left at"), null=True, blank=True)
    order_id = models.UUIDField(_("order"), null=True, blank=True)
    # Each email's claim and mark (compare-and-set), so a redelivered task sends it once.
    offer_email_claimed_at = MillisecondDateTimeField(_("offer email claimed at"), null=True, blank=True)
    offer_email_sent_at = MillisecondDateTimeField(_("offer email sent at"), null=True, blank=True)
    expired_email_claimed_at = MillisecondDateTimeField(_("offer expired email claimed at"), null=True, blank=True)
    expired_email_sent_at = MillisecondDateTimeField(_("offer expired email sent at"), null=True, blank=True)

    objects = TenantScopedQuerySet.as_manager()

    class Meta:
        verbose_name = _("waitlist entry")
        verbose_name_plural = _("waitlist entries")
        ordering = ["created_at"]
        constraints = [
            # One row per address and type: joining again reuses it (back of the line), so two
            # simultaneous joins cannot put one address in line twice.
            models.UniqueConstraint(fields=["ticket_type", "email"], name="waitlistentry_unique_type_email"),
        ]
        indexes = [
            # Next in line for a type, and whether anyone waits for it.
            models.Index(fields=["ticket_type", "status", "created_at"], name="waitlist_type_status_created"),
            # The sweep: offers past their hold.
            models.Index(fields=["status", "offer_expires_at"], name="waitlist_status_expires"),
            # The organizer's list per event.
            models.Index(fields=["tenant", "event", "created_at"], name="waitlist_event_created"),
        ]

    def __str__(self):
        return f"{self.email} ({self.get_status_display()})"

    @property
    def is_active(self) -> bool:
        return self.status in {self.Status.WAITING, self.Status.OFFERED}
