import uuid
from typing import Self

from django.core.exceptions import ValidationError
from django.core.validators import MinValueValidator
from django.db import models
from django.db.models import Q
from django.utils import timezone
from django.utils.translation import gettext_lazy as _

from events.guest_view_versions import GuestViewModel, GuestViewQuerySet
from events.models import Event
from eventsaas.fields import MillisecondDateTimeField
from eventsaas.models import TenantScopedQuerySet
from eventsaas.validators import validate_no_control_characters
from guests.codes import generate_code
from tenants.models import Tenant

# What the worker's activity stamps and the invitation mail write: nothing a guest sees (events.guest_view_versions).
GUEST_FIELDS_UNSEEN_BY_GUESTS = frozenset({"last_login_at", "last_access_at", "invited_at"})


class GuestQuerySet(GuestViewQuerySet["Guest"]):
    unseen_fields = GUEST_FIELDS_UNSEEN_BY_GUESTS

    def for_event(self, event: Event) -> Self:
        # tenant_id is repeated on purpose: every guest query is scoped by both keys.
        return self.filter(tenant_id=event.tenant_id, event_id=event.pk)

    def in_group(self, guest: "Guest") -> Self:
        """The guest's household: the guest plus everyone sharing its group id."""
        if guest.group_id is None:
            return self.filter(pk=guest.pk)
        return self.filter(tenant_id=guest.tenant_id, event_id=guest.event_id, group_id=guest.group_id)


class Guest(GuestViewModel):
    """An invited person with their own code, and their own answer.

    Each member of a household owns an answer: `status` and `num_guests` (the
    member plus the people they bring who have no code of their own; 0 unless
    coming) and who gave it. A household's head count is the sum of its
    members' `num_guests`. Answers are written only by guests.services.guest_answers_apply.
    """

    class Status(models.TextChoices):
        PENDING = "pending", _("Pending")
        COMING = "coming", _("Coming")
        DECLINED = "declined", _("Declined")

    class AnsweredBy(models.TextChoices):
        SELF = "self", _("the guest")
        HOUSEHOLD = "household", _("another member of the household")
        ORGANIZER = "organizer", _("an organizer")
        # A ticket holder's answer follows their valid tickets (billing issues, refunds and voids them).
        TICKETS = "tickets", _("their tickets")

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    # No single-column index: every guest index leads with tenant.
    tenant = models.ForeignKey(Tenant, models.CASCADE, verbose_name=_("organization"), related_name="+", db_index=False)
    event = models.ForeignKey(Event, models.CASCADE, verbose_name=_("event"), related_name="guests")
    first_name = models.CharField(_("first name"), max_length=100, validators=[validate_no_control_characters])
    last_name = models.CharField(_("last name"), max_length=100, validators=[validate_no_control_characters])
    email = models.EmailField(_("email"), blank=True)
    phone = models.CharField(_("phone"), max_length=40, blank=True)
    code = models.CharField(_("personal code"), max_length=16, unique=True, editable=False, default=generate_code)
    group_id = models.UUIDField(_("group"), null=True, blank=True)
    # The organizer's own id for this guest (a spreadsheet's or another system's): a re-import
    # matches on it. Unique per event when set (see Meta.constraints).
    external_id = models.CharField(_("external id"), max_length=100, blank=True)
    # Set for a ticket holder: the key of what made them a guest (billing's order, "order:<id>").
    # Unique per event (see Meta.constraints), so a retried or concurrent issue finds, never
    # duplicates, the guest; their answer follows their valid tickets (guest_tickets_follow).
    holder_key = models.CharField(_("ticket holder key"), max_length=100, blank=True, editable=False)
    expected_guests = models.PositiveSmallIntegerField(
        _("expected guests"),
        default=1,
        validators=[MinValueValidator(1)],
        help_text=_("This guest plus the people without their own code (small children)."),
    )
    status = models.CharField(_("status"), max_length=10, choices=Status.choices, default=Status.PENDING)
    num_guests = models.PositiveSmallIntegerField(_("answered for"), default=0)
    dietary = models.TextField(_("dietary needs"), blank=True)
    answers = models.JSONField(_("answers"), default=dict, blank=True)
    rsvp_at = MillisecondDateTimeField(_("answered at"), null=True, blank=True)
    # Who gave the current answer: the guest, another member (answered_by_guest_id)
    # or an organizer (answered_by_user_id). Plain ids, like GuestActivity.actor_user_id:
    # deleting an account or a guest never rewrites someone else's answer.
    answered_by_kind = models.CharField(_("answered by"), max_length=10, choices=AnsweredBy.choices, blank=True)
    answered_by_guest_id = models.UUIDField(_("answered by guest"), null=True, blank=True)
    answered_by_user_id = models.UUIDField(_("answered by user"), null=True, blank=True)
    # guests.codes.search_key(): names and code without case, accents or punctuation,
    # kept by guests.services on every write. No index: `icontains` cannot use one, and
    # every search is scoped to one event by the tenant/event indexes below.
    search_key = models.CharField(_("search key"), max_length=450, blank=True, editable=False)
    last_login_at = MillisecondDateTimeField(_("last login"), null=True, blank=True)
    last_access_at = MillisecondDateTimeField(_("last access"), null=True, blank=True)
    invited_at = MillisecondDateTimeField(_("invited at"), null=True, blank=True)
    # When the guest last asked the organizer to change their answer (rsvp.ChangeRequest). Null: never, so the
    # guest's page and API skip looking for a request (most guests never ask). Set before the request is stored.
    change_requested_at = MillisecondDateTimeField(_("change requested at"), null=True, blank=True, editable=False)
    created_at = MillisecondDateTimeField(_("created at"), default=timezone.now, editable=False)

    objects = GuestQuerySet.as_manager()
    guest_view_unseen_fields = GUEST_FIELDS_UNSEEN_BY_GUESTS

    class Meta:
        verbose_name = _("guest")
        verbose_name_plural = _("guests")
        ordering = ["last_name", "first_name"]
        constraints = [
            models.CheckConstraint(condition=Q(expected_guests__gte=1), name="guest_expected_guests_at_least_one"),
            # coming <=> at least one person; a second guard on SQL databases (MongoDB does not
            # enforce check constraints): the answer services and clean() hold the same rule.
            models.CheckConstraint(
                condition=Q(status="coming", num_guests__gte=1) | (~Q(status="coming") & Q(num_guests=0)),
                name="guest_num_guests_matches_status",
            ),
            # A re-import matches on the external id, so one id names one guest of an event.
            # `> ""` rather than `!= ""`: a partial index condition MongoDB can express (docs/mongodb.md);
            # it also serves the import's lookup (event leading).
            models.UniqueConstraint(
                fields=["tenant", "event", "external_id"],
                condition=Q(external_id__gt=""),
                name="guest_unique_external_id_per_event",
            ),
            # One guest per ticket holder: the compare of ticket issue's get-or-create.
            models.UniqueConstraint(
                fields=["tenant", "event", "holder_key"],
                condition=Q(holder_key__gt=""),
                name="guest_unique_holder_key_per_event",
            ),
        ]
        # Each index serves one real query; code lookups use the unique index on code.
        indexes = [
            # the household of a guest (RSVP page, group management, the guest list's
            # group column). Not partial: SQLite cannot prove that `group_id IN (...)`
            # implies a partial condition other than IS NOT NULL, and MongoDB's partial
            # indexes cannot express IS NOT NULL, so a partial index would help only one
            # of the three databases (measured in bench/dashboard.py: 540 ms -> ~1 ms).
            models.Index(fields=["tenant", "event", "group_id"], name="guest_event_group"),
            # the whole guest list, ordered by name (the default page)
            models.Index(fields=["tenant", "event", "last_name", "first_name"], name="guest_event_name"),
            # guest list filtered by status, ordered by name
            models.Index(fields=["tenant", "event", "status", "last_name"], name="guest_event_status"),
            # dietary report: coming guests with dietary needs
            models.Index(fields=["tenant", "event", "status", "dietary"], name="guest_event_status_dietary"),
            # activity page and "never logged in" filter
            models.Index(fields=["tenant", "event", "last_login_at"], name="guest_event_last_login"),
        ]

    def __str__(self):
        return self.full_name

    def clean(self):
        if self.status == self.Status.COMING and (self.num_guests or 0) < 1:
            raise ValidationError({"num_guests": _("A guest who is coming counts at least 1 person.")})
        if self.status != self.Status.COMING and self.num_guests:
            raise ValidationError({"num_guests": _("Only a guest who is coming counts people.")})

    @property
    def full_name(self) -> str:
        return f"{self.first_name} {self.last_name}".strip()

    @property
    def is_ticket_holder(self) -> bool:
        """A guest made by buying or registering: the answer follows the valid tickets, not the RSVP form."""
        return bool(self.holder_key)

    @property
    def has_answered(self) -> bool:
        return self.status != self.Status.PENDING

    @property
    def is_coming(self) -> bool:
        return self.status == self.Status.COMING

    @property
    def is_own_decline(self) -> bool:
        """Declined by the guest, or by an organizer recording the guest's word.

        Another member's answer never changes it without an explicit, confirmed
        choice (rsvp.services).
        """
        return self.status == self.Status.DECLINED and self.answered_by_kind in (
            self.AnsweredBy.SELF,
            self.AnsweredBy.ORGANIZER,
        )

    @property
    def usual_count(self) -> int:
        """The people this member counts for when nobody says otherwise: the answer given, else the invitation's."""
        return self.num_guests if self.is_coming else self.expected_guests


class GuestActivity(models.Model):
    """One thing a guest did (or an organizer did with a guest), written in batches by guests.activity.

    Best effort: a request only publishes the event; the consumer inserts these
    rows and moves the guest's last_login_at / last_access_at forward. The id is
    chosen when the event happens, so a message delivered twice is stored once.
    """

    class Kind(models.TextChoices):
        LOGIN = "login", _("Logged in")
        PAGE_VIEW = "page_view", _("Opened the RSVP page")
        API_CALL = "api_call", _("Used the app (API)")
        RSVP_SUBMITTED = "rsvp_submitted", _("Sent an answer")
        ORGANIZER_VIEW = "organizer_view", _("Viewed by the organizer")

    #: Kinds that are the guest's own doing: they move last_access_at.
    GUEST_KINDS = frozenset({Kind.LOGIN, Kind.PAGE_VIEW, Kind.API_CALL, Kind.RSVP_SUBMITTED})
    USER_AGENT_MAX_LENGTH = 200

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    # No single-column indexes: the two below lead with what every query filters on.
    tenant = models.ForeignKey(Tenant, models.CASCADE, verbose_name=_("organization"), related_name="+", db_index=False)
    event = models.ForeignKey(Event, models.CASCADE, verbose_name=_("event"), related_name="+", db_index=False)
    guest = models.ForeignKey(Guest, models.CASCADE, verbose_name=_("guest"), related_name="activity", db_index=False)
    kind = models.CharField(_("kind"), max_length=20, choices=Kind.choices)
    at = MillisecondDateTimeField(_("at"))
    user_agent = models.CharField(_("browser"), max_length=USER_AGENT_MAX_LENGTH, blank=True)
    # A keyed hash of the client's IP address: tells devices apart, never stores the address.
    client_hash = models.CharField(_("client"), max_length=32, blank=True)
    # The organizer for organizer_view; a plain id, not a foreign key, so a
    # batch never fails because an account was deleted while it waited.
    actor_user_id = models.UUIDField(_("acting user"), null=True, blank=True)

    objects = TenantScopedQuerySet.as_manager()

    class Meta:
        verbose_name = _("guest activity")
        verbose_name_plural = _("guest activity")
        ordering = ["-at"]
        indexes = [
            # the event's recent activity (organizer activity page) and retention cleanup
            models.Index(fields=["tenant", "event", "at"], name="activity_event_at"),
            # one guest's timeline (guest detail page)
            models.Index(fields=["guest", "at"], name="activity_guest_at"),
        ]

    def __str__(self):
        return f"{self.kind} @ {self.at:%Y-%m-%d %H:%M}"


class GuestMessage(models.Model):
    """One email sent (or being sent) to a guest or an organizer: the idempotency record and the message log.

    The row is claimed before the email goes out: the unique constraint on
    (recipient, kind, window) lets exactly one sender insert it, and only the
    sender whose compare-and-set moves it from "sending" (or "failed") sends.
    """

    class Kind(models.TextChoices):
        INVITATION = "invitation", _("Invitation")
        CONFIRMATION = "confirmation", _("RSVP confirmation")
        REMINDER = "reminder", _("Reminder")
        DIGEST = "digest", _("Daily digest")
        CHANGE_APPROVED = "change_approved", _("Change request approved")
        CHANGE_DECLINED = "change_declined", _("Change request declined")

    class Status(models.TextChoices):
        SENDING = "sending", _("Sending")
        SENT = "sent", _("Sent")
        FAILED = "failed", _("Failed")

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    tenant = models.ForeignKey(Tenant, models.CASCADE, verbose_name=_("organization"), related_name="+", db_index=False)
    event = models.ForeignKey(Event, models.CASCADE, verbose_name=_("event"), related_name="+", db_index=False)
    # Null for an organizer's digest.
    guest = models.ForeignKey(
        Guest, models.SET_NULL, verbose_name=_("guest"), related_name="messages", null=True, blank=True
    )
    recipient = models.EmailField(_("recipient"))
    kind = models.CharField(_("kind"), max_length=20, choices=Kind.choices)
    # Which occurrence: the reminder day, the digest date, a send id for invitations.
    window = models.CharField(_("window"), max_length=100)
    status = models.CharField(_("status"), max_length=10, choices=Status.choices, default=Status.SENDING)
    error = models.TextField(_("error"), blank=True)
    created_at = MillisecondDateTimeField(_("created at"), default=timezone.now, editable=False)
    # When the current attempt took the row: a "sending" row older than a task's
    # hard time limit belongs to a dead attempt and may be taken over.
    claimed_at = MillisecondDateTimeField(_("claimed at"), default=timezone.now)
    sent_at = MillisecondDateTimeField(_("sent at"), null=True, blank=True)

    objects = TenantScopedQuerySet.as_manager()

    class Meta:
        verbose_name = _("message")
        verbose_name_plural = _("messages")
        ordering = ["-created_at"]
        constraints = [
            # The recipient stands in for the guest: a digest has no guest, and the
            # event keeps two events' digests to one address apart.
            models.UniqueConstraint(fields=["event", "recipient", "kind", "window"], name="message_unique_window"),
        ]
        indexes = [
            # the event's message log, newest first
            models.Index(fields=["tenant", "event", "created_at"], name="message_event_created"),
        ]

    def __str__(self):
        return f"{self.kind} → {self.recipient} ({self.window})"


class GuestImport(models.Model):
    """One upload of a guest spreadsheet: its rows, the preview, then (once confirmed) the result.

    Written only by guests.imports. The status moves forward by compare-and-set, so
    a job is checked once and applied once, however often "confirm" is pressed or a
    task is delivered: uploaded -> checking -> ready -> confirmed -> applying -> applied,
    or failed. `rows` holds the parsed cells and, after each pass, every row's verdict.
    """

    class Status(models.TextChoices):
        UPLOADED = "uploaded", _("Uploaded")
        CHECKING = "checking", _("Checking")
        READY = "ready", _("Ready to import")
        CONFIRMED = "confirmed", _("Confirmed")
        APPLYING = "applying", _("Importing")
        APPLIED = "applied", _("Imported")
        FAILED = "failed", _("Failed")

    #: The statuses a task is still working through: the page polls while the job is in one.
    IN_PROGRESS = frozenset({Status.UPLOADED, Status.CHECKING, Status.CONFIRMED, Status.APPLYING})

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    tenant = models.ForeignKey(Tenant, models.CASCADE, verbose_name=_("organization"), related_name="+", db_index=False)
    event = models.ForeignKey(Event, models.CASCADE, verbose_name=_("event"), related_name="+", db_index=False)
    # Plain ids, like GuestActivity.actor_user_id: deleting an account keeps the job's history.
    created_by_user_id = models.UUIDField(_("uploaded by"), null=True, blank=True)
    confirmed_by_user_id = models.UUIDField(_("confirmed by"), null=True, blank=True)
    file_name = models.CharField(_("file name"), max_length=255)
    #: the file's columns that were understood: field name per column, in the file's order
    columns = models.JSONField(_("columns"), default=list)
    ignored_columns = models.JSONField(_("ignored columns"), default=list)
    rows = models.JSONField(_("rows"), default=list)
    status = models.CharField(_("status"), max_length=10, choices=Status.choices, default=Status.UPLOADED)
    total_rows = models.PositiveIntegerField(_("rows"), default=0)
    processed_rows = models.PositiveIntegerField(_("rows done"), default=0)
    new_count = models.PositiveIntegerField(_("new"), default=0)
    updated_count = models.PositiveIntegerField(_("updated"), default=0)
    unchanged_count = models.PositiveIntegerField(_("unchanged"), default=0)
    refused_count = models.PositiveIntegerField(_("refused"), default=0)
    error = models.TextField(_("error"), blank=True)
    created_at = MillisecondDateTimeField(_("created at"), default=timezone.now, editable=False)
    confirmed_at = MillisecondDateTimeField(_("confirmed at"), null=True, blank=True)
    finished_at = MillisecondDateTimeField(_("finished at"), null=True, blank=True)

    objects = TenantScopedQuerySet.as_manager()

    class Meta:
        verbose_name = _("guest import")
        verbose_name_plural = _("guest imports")
        ordering = ["-created_at"]
        indexes = [
            # the event's recent imports (import page)
            models.Index(fields=["tenant", "event", "created_at"], name="guestimport_event_created"),
        ]

    def __str__(self):
        return f"{self.file_name} ({self.status})"

    @property
    def is_in_progress(self) -> bool:
        return self.status in self.IN_PROGRESS

    @property
    def is_ready(self) -> bool:
        return self.status == self.Status.READY

    @property
    def is_applied(self) -> bool:
        return self.status == self.Status.APPLIED

    @property
    def progress_percent(self) -> int:
        if not self.total_rows:
            return 0
        return min(100, self.processed_rows * 100 // self.total_rows)
