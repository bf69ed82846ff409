import functools
import uuid
import zoneinfo
from datetime import datetime
from typing import Self

from django.conf import settings
from django.core.exceptions import ValidationError
from django.core.validators import MaxValueValidator, MinValueValidator
from django.db import models
from django.utils.functional import Promise
from django.utils.timezone import now
from django.utils.translation import gettext_lazy as _

from events.guest_view_versions import GuestViewModel, GuestViewQuerySet
from eventsaas.dates import is_sane_datetime, validate_sane_datetime
from eventsaas.fields import MillisecondDateTimeField
from tenants.models import Tenant


@functools.cache
def known_timezones() -> frozenset[str]:
    """IANA zone names; zoneinfo.available_timezones() walks the tz database on every call."""
    return frozenset(zoneinfo.available_timezones())


def validate_timezone(value: str) -> None:
    if value not in known_timezones():
        raise ValidationError(_("“%(value)s” is not a known time zone."), params={"value": value})


def questions_error(questions: object) -> str | Promise | None:
    """Why a custom question list is unusable, or None: RSVP answers are keyed by `key`, so keys are unique."""
    malformed = _("Each question needs a key, a label and a list of text choices.")
    if not isinstance(questions, list):
        return malformed
    seen = set()
    for question in questions:
        if not (
            isinstance(question, dict)
            and isinstance(question.get("key"), str)
            and question["key"].strip()
            and isinstance(question.get("label"), str)
            and question["label"].strip()
            and isinstance(question.get("choices", []), list)
            and all(isinstance(choice, str) for choice in question.get("choices", []))
        ):
            return malformed
        if question["key"] in seen:
            return _("Two questions have the same key: %(key)s") % {"key": question["key"]}
        seen.add(question["key"])
    return None


class EventQuerySet(GuestViewQuerySet["Event"]):
    event_attname = "id"

    def active(self) -> Self:
        return self.exclude(status=Event.Status.ARCHIVED)


class Event(GuestViewModel):
    guest_view_event_attname = "id"

    class Kind(models.TextChoices):
        INVITE_ONLY = "invite_only", _("Invite only")
        TICKETED = "ticketed", _("Ticketed")

    class Status(models.TextChoices):
        DRAFT = "draft", _("Draft")
        PUBLISHED = "published", _("Published")
        ARCHIVED = "archived", _("Archived")

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    tenant = models.ForeignKey(
        Tenant, models.CASCADE, verbose_name=_("organization"), related_name="events", db_index=False
    )
    name = models.CharField(_("name"), max_length=200)
    slug = models.SlugField(_("slug"), max_length=80, db_index=False)  # unique with tenant
    description = models.TextField(_("description"), blank=True)
    kind = models.CharField(_("kind"), max_length=20, choices=Kind.choices, default=Kind.INVITE_ONLY)
    status = models.CharField(_("status"), max_length=20, choices=Status.choices, default=Status.DRAFT)
    starts_at = MillisecondDateTimeField(_("starts at"), validators=[validate_sane_datetime])
    ends_at = MillisecondDateTimeField(_("ends at"), null=True, blank=True, validators=[validate_sane_datetime])
    timezone = models.CharField(_("time zone"), max_length=64, default="UTC", validators=[validate_timezone])
    location = models.CharField(_("location"), max_length=300, blank=True)
    dress_code = models.CharField(_("dress code"), max_length=200, blank=True)
    rsvp_deadline = MillisecondDateTimeField(
        _("RSVP deadline"), null=True, blank=True, validators=[validate_sane_datetime]
    )
    language = models.CharField(_("guest language"), max_length=10, choices=settings.LANGUAGES, default="en")
    contact_email = models.EmailField(_("organizer contact email"), blank=True)
    # [{"key": "song", "label": "Which song gets you dancing?", "choices": []}]
    questions = models.JSONField(_("custom questions"), default=list, blank=True)
    created_at = MillisecondDateTimeField(_("created at"), default=now, editable=False)
    updated_at = MillisecondDateTimeField(_("updated at"), default=now)
    # Set once, by the scheduled close job, when the deadline has passed.
    rsvp_closed_at = MillisecondDateTimeField(_("RSVP closed at"), null=True, blank=True, editable=False)
    # Ticketed events: ask the buyer for a name per ticket (printed on it, checked at the door).
    attendee_names_required = models.BooleanField(_("ask for a name per ticket"), default=False)

    objects = EventQuerySet.as_manager()

    class Meta:
        verbose_name = _("event")
        verbose_name_plural = _("events")
        ordering = ["starts_at"]
        constraints = [models.UniqueConstraint(fields=["tenant", "slug"], name="event_unique_slug_per_tenant")]
        # The organizer's event list: tenant, newest first, optionally by status.
        indexes = [models.Index(fields=["tenant", "status", "starts_at"], name="event_tenant_status_starts")]

    def __str__(self):
        return self.name

    def clean(self):
        errors = {}
        if not all(is_sane_datetime(value) for value in (self.starts_at, self.ends_at, self.rsvp_deadline)):
            return  # the field validators say which date is out of range; comparing them could overflow
        if self.ends_at and self.starts_at and self.ends_at < self.starts_at:
            errors["ends_at"] = _("The event cannot end before it starts.")
        if self.rsvp_deadline and self.starts_at and self.rsvp_deadline > self.starts_at:
            errors["rsvp_deadline"] = _("The RSVP deadline should be before the event starts.")
        if question_error := questions_error(self.questions):
            errors["questions"] = question_error
        if errors:
            raise ValidationError(errors)

    @property
    def tzinfo(self):
        return zoneinfo.ZoneInfo(self.timezone)

    def is_rsvp_open(self, at=None) -> bool:
        if self.status != self.Status.PUBLISHED:
            return False
        if self.rsvp_closed_at is not None and (
            self.rsvp_deadline is None or self.rsvp_deadline <= self.rsvp_closed_at
        ):
            return False
        return self.rsvp_deadline is None or (at or now()) < self.rsvp_deadline

    RSVP_OPEN, RSVP_NOT_OPEN_YET, RSVP_CLOSED = "open", "not_open_yet", "closed"

    def rsvp_state(self, at=None) -> str:
        """open; not_open_yet (a draft: guests wait for it to be published); closed (deadline passed, archived)."""
        if self.status == self.Status.DRAFT:
            return self.RSVP_NOT_OPEN_YET
        return self.RSVP_OPEN if self.is_rsvp_open(at) else self.RSVP_CLOSED

    @property
    def rsvp_state_now(self) -> str:
        return self.rsvp_state()

    @property
    def is_archived(self) -> bool:
        return self.status == self.Status.ARCHIVED

    @property
    def is_ticketed(self) -> bool:
        return self.kind == self.Kind.TICKETED

    @property
    def is_on_sale(self) -> bool:
        """Whether the public may buy tickets at all (each ticket type also has its own window)."""
        return self.is_ticketed and self.status == self.Status.PUBLISHED

    def has_ended(self, at: datetime | None = None) -> bool:
        """Past its end, or its start when it has no end."""
        return (self.ends_at or self.starts_at) <= (at or now())


def validate_currency(value: str) -> None:
    if not (len(value) == 3 and value.isascii() and value.isalpha() and value.islower()):
        raise ValidationError(_("Use a three-letter ISO currency code in lower case, such as eur."))


# The seat counters change with every order and are never served from memory (billing/checkout_terms.py):
# writing only them changes no guest view version.
TICKET_TYPE_COUNTERS = frozenset({"sold", "reserved"})


class TicketTypeQuerySet(GuestViewQuerySet["TicketType"]):
    unseen_fields = TICKET_TYPE_COUNTERS

    def on_sale(self, at: datetime | None = None) -> Self:
        """Types whose sales window is open now; sold-out types stay listed (as sold out)."""
        at = at or now()
        return self.filter(
            models.Q(sales_start__isnull=True) | models.Q(sales_start__lte=at),
            models.Q(sales_end__isnull=True) | models.Q(sales_end__gt=at),
            is_active=True,
        )


class TicketType(GuestViewModel):
    """What a ticketed event sells. `sold` and `reserved` are counters owned by events.

    Both change only through events' single-row conditional updates (events.services.seats_*, called by
    billing's orders), so
    `sold + reserved <= capacity` holds on every database without locks. Any other write changes the
    event's guest view version: checkout keeps the types in memory under it (billing/checkout_terms.py).
    """

    guest_view_unseen_fields = TICKET_TYPE_COUNTERS

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    tenant = models.ForeignKey(Tenant, models.CASCADE, verbose_name=_("organization"), related_name="+", db_index=False)
    event = models.ForeignKey(
        Event, models.CASCADE, verbose_name=_("event"), related_name="ticket_types", db_index=False
    )
    name = models.CharField(_("name"), max_length=120)
    description = models.CharField(_("description"), max_length=500, blank=True)
    price = models.PositiveIntegerField(
        _("price (in cents)"), help_text=_("In the currency's minor unit: 2500 is 25.00.")
    )
    currency = models.CharField(_("currency"), max_length=3, default="eur", validators=[validate_currency])
    capacity = models.PositiveIntegerField(_("capacity"))
    sold = models.PositiveIntegerField(_("sold"), default=0, editable=False)
    reserved = models.PositiveIntegerField(_("reserved"), default=0, editable=False)
    sales_start = MillisecondDateTimeField(_("sales start"), null=True, blank=True, validators=[validate_sane_datetime])
    sales_end = MillisecondDateTimeField(_("sales end"), null=True, blank=True, validators=[validate_sane_datetime])
    max_per_order = models.PositiveSmallIntegerField(
        _("maximum per order"), default=10, validators=[MinValueValidator(1), MaxValueValidator(100)]
    )
    # Blank: listed for everyone. Set: listed only to buyers who enter this code.
    access_code = models.CharField(_("access code"), max_length=40, blank=True)
    is_active = models.BooleanField(_("on sale"), default=True)
    position = models.PositiveSmallIntegerField(_("position"), default=0)
    created_at = MillisecondDateTimeField(_("created at"), default=now, editable=False)
    # Set once, before the first entry of its waitlist is stored, and never cleared: checkout and the shop
    # look for people waiting (whose free seats are held back) only on types that have it, which a rush
    # on a type nobody ever waited for then skips (one query less per order).
    waitlist_started_at = MillisecondDateTimeField(_("waitlist started at"), null=True, blank=True, editable=False)

    objects = TicketTypeQuerySet.as_manager()

    class Meta:
        verbose_name = _("ticket type")
        verbose_name_plural = _("ticket types")
        ordering = ["position", "price", "name"]
        constraints = [
            models.UniqueConstraint(fields=["event", "name"], name="tickettype_unique_name_per_event"),
            models.CheckConstraint(
                condition=models.Q(sold__lte=models.F("capacity") - models.F("reserved")),
                name="tickettype_sold_reserved_within_capacity",
            ),
        ]
        # The shop and the dashboard list an event's types in order.
        indexes = [models.Index(fields=["tenant", "event", "position"], name="tickettype_event_position")]

    def __str__(self):
        return self.name

    def clean(self):
        errors = {}
        if (
            self.sales_start
            and self.sales_end
            and is_sane_datetime(self.sales_start)
            and is_sane_datetime(self.sales_end)
            and self.sales_end <= self.sales_start
        ):
            errors["sales_end"] = _("Sales must end after they start.")
        if self.capacity is not None and self.capacity < (self.sold or 0) + (self.reserved or 0):
            errors["capacity"] = _("%(count)s tickets are already sold or reserved; the capacity cannot be lower.") % {
                "count": (self.sold or 0) + (self.reserved or 0)
            }
        if errors:
            raise ValidationError(errors)

    @property
    def remaining(self) -> int:
        return max(self.capacity - self.sold - self.reserved, 0)

    @property
    def is_sold_out(self) -> bool:
        return self.remaining == 0

    def hold_back_for_waitlist(self) -> "TicketType":
        """The type as the public sees it while people wait for it: its free seats theirs, none left to buy.
        In memory only, never saved (`reserved` is billing's counter)."""
        return self.shown_sold_out()

    def shown_sold_out(self) -> "TicketType":
        """The type with no seat left (`remaining` 0), in memory only, never saved."""
        self.reserved = max(self.capacity - self.sold, 0)
        return self

    def is_in_sales_window(self, at=None) -> bool:
        at = at or now()
        return (
            self.is_active
            and (self.sales_start is None or self.sales_start <= at)
            and (self.sales_end is None or at < self.sales_end)
        )
