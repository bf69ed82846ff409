import uuid

from django.db import models
from django.db.models import Q
from django.utils import timezone
from django.utils.translation import gettext_lazy as _

from events.models import Event
from eventsaas.fields import MillisecondDateTimeField
from eventsaas.models import TenantScopedQuerySet
from guests.models import Guest
from tenants.models import Tenant


class ChangeRequest(models.Model):
    """A guest's request, after the deadline, that the organizer change their answer.

    `proposed` holds the answer as the guest sent it (the same body as PUT
    /api/v1/rsvp); an organizer who approves applies it through the organizer's
    answer path. The status moves once, pending -> approved or declined, by a
    compare-and-set (rsvp.services), so a request is decided exactly once.
    """

    class Status(models.TextChoices):
        PENDING = "pending", _("Pending")
        APPROVED = "approved", _("Approved")
        DECLINED = "declined", _("Declined")

    MESSAGE_MAX_LENGTH = 1000

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    tenant = models.ForeignKey(Tenant, models.CASCADE, verbose_name=_("organization"), related_name="+", db_index=False)
    event = models.ForeignKey(Event, models.CASCADE, verbose_name=_("event"), related_name="+", db_index=False)
    guest = models.ForeignKey(
        Guest, models.CASCADE, verbose_name=_("guest"), related_name="change_requests", db_index=False
    )
    proposed = models.JSONField(_("proposed answer"))
    message = models.TextField(_("message"), max_length=MESSAGE_MAX_LENGTH, blank=True)
    status = models.CharField(_("status"), max_length=10, choices=Status.choices, default=Status.PENDING)
    created_at = MillisecondDateTimeField(_("created at"), default=timezone.now, editable=False)
    # The organizer who decided; a plain id like Guest.answered_by_user_id.
    decided_by_user_id = models.UUIDField(_("decided by"), null=True, blank=True)
    decided_at = MillisecondDateTimeField(_("decided at"), null=True, blank=True)
    response = models.TextField(_("organizer's note"), max_length=MESSAGE_MAX_LENGTH, blank=True)

    objects = TenantScopedQuerySet.as_manager()

    class Meta:
        verbose_name = _("change request")
        verbose_name_plural = _("change requests")
        ordering = ["-created_at"]
        constraints = [
            # One open request per guest: asking again updates it (rsvp.services.change_request_create).
            models.UniqueConstraint(
                fields=["guest"], condition=Q(status="pending"), name="changerequest_one_pending_per_guest"
            ),
        ]
        indexes = [
            # the dashboard's pending requests, oldest first
            models.Index(fields=["tenant", "event", "status", "created_at"], name="changerequest_event_status"),
            # one guest's requests (their RSVP page, the organizer's guest page)
            models.Index(fields=["tenant", "event", "guest", "created_at"], name="changerequest_event_guest"),
        ]

    def __str__(self):
        return f"{self.guest_id} ({self.status})"

    def save(self, *args, **kwargs):
        if self._state.adding:
            # The guest's flag first: a request whose flag was lost would be invisible to the guest, while a flag
            # without a request (this save failing) only costs a lookup that finds nothing.
            Guest.objects.filter(pk=self.guest_id, tenant_id=self.tenant_id, event_id=self.event_id).update(
                change_requested_at=self.created_at
            )
        super().save(*args, **kwargs)

    @property
    def is_pending(self) -> bool:
        return self.status == self.Status.PENDING
