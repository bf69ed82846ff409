import functools
import uuid
import zoneinfo

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import models
from django.utils.timezone import now
from django.utils.translation import gettext_lazy as _

from tenants.models import Tenant, TenantScopedQuerySet


@functools.cache
def known_timezones() -> frozenset[str]:
    """IANA zone names; zoneinfo.available_timezones() walks the tz database on every call."""
    return frozenset(zoneinfo.available_timezones())


def validate_timezone(value: str) -> None:
    if value not in known_timezones():
        raise ValidationError(_("“%(value)s” is not a known time zone."), params={"value": value})


def questions_error(questions) -> str | None:
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


class EventQuerySet(TenantScopedQuerySet):
    def active(self):
        return self.exclude(status=Event.Status.ARCHIVED)


class Event(models.Model):
    class Kind(models.TextChoices):
        INVITE_ONLY = "invite_only", _("Invite only")

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
    starts_at = models.DateTimeField(_("starts at"))
    ends_at = models.DateTimeField(_("ends at"), null=True, blank=True)
    timezone = models.CharField(_("time zone"), max_length=64, default="UTC", validators=[validate_timezone])
    location = models.CharField(_("location"), max_length=300, blank=True)
    dress_code = models.CharField(_("dress code"), max_length=200, blank=True)
    rsvp_deadline = models.DateTimeField(_("RSVP deadline"), null=True, blank=True)
    language = models.CharField(_("guest language"), max_length=10, choices=settings.LANGUAGES, default="en")
    contact_email = models.EmailField(_("organizer contact email"), blank=True)
    # [{"key": "song", "label": "Which song gets you dancing?", "choices": []}]
    questions = models.JSONField(_("custom questions"), default=list, blank=True)
    created_at = models.DateTimeField(_("created at"), default=now, editable=False)
    updated_at = models.DateTimeField(_("updated at"), default=now)
    # Set once, by the scheduled close job, when the deadline has passed.
    rsvp_closed_at = models.DateTimeField(_("RSVP closed at"), null=True, blank=True, editable=False)

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

    @property
    def is_archived(self) -> bool:
        return self.status == self.Status.ARCHIVED
