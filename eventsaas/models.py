"""The platform's models: the audit log every app's services write, and tasks that failed for good.

They moved here from tenants (issue 14): tenants is one app among the others, while every app
writes the audit log and every app's tasks can fail. The tables keep their names (`db_table`).
"""

import uuid
from typing import TYPE_CHECKING, Self, TypeVar

from django.conf import settings
from django.core.serializers.json import DjangoJSONEncoder
from django.db import models
from django.db.models import Q
from django.utils import timezone
from django.utils.translation import gettext_lazy as _

from eventsaas.fields import MillisecondDateTimeField

if TYPE_CHECKING:
    from tenants.models import Tenant


_M = TypeVar("_M", bound=models.Model)


class TenantScopedQuerySet(models.QuerySet[_M, _M]):
    """The one place tenant scoping is expressed: every organizer-facing read starts here."""

    def for_tenant(self, tenant: "Tenant") -> Self:
        return self.filter(tenant_id=tenant.pk)


class AuditLog(models.Model):
    """Append-only record of every state change, written by the services."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    tenant = models.ForeignKey(
        "tenants.Tenant",
        models.CASCADE,
        verbose_name=_("organization"),
        related_name="+",
        null=True,
        blank=True,
        db_index=False,
    )
    event_id = models.UUIDField(_("event"), null=True, blank=True)
    action = models.CharField(_("action"), max_length=64)
    actor_user = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        models.SET_NULL,
        verbose_name=_("acting user"),
        null=True,
        blank=True,
        related_name="+",
    )
    actor_guest_id = models.UUIDField(_("acting guest"), null=True, blank=True)
    object_id = models.UUIDField(_("object"), null=True, blank=True)
    data = models.JSONField(_("data"), default=dict, blank=True)
    created_at = MillisecondDateTimeField(_("created at"), default=timezone.now, editable=False)

    objects = TenantScopedQuerySet.as_manager()

    class Meta:
        # The table keeps the name it had when tenants owned the model (no data moves).
        db_table = "tenants_auditlog"
        verbose_name = _("audit log entry")
        verbose_name_plural = _("audit log")
        ordering = ["-created_at"]
        indexes = [
            models.Index(fields=["tenant", "event_id", "created_at"], name="audit_tenant_event_created"),
            # one object's history, newest first (a guest's answers on the organizer's guest page)
            models.Index(fields=["tenant", "event_id", "object_id", "created_at"], name="audit_event_object_created"),
        ]

    def __str__(self):
        return f"{self.action} @ {self.created_at:%Y-%m-%d %H:%M}"


class FailedTask(models.Model):
    """A Celery task that failed for good (after its retries) or could not be enqueued.

    Written by eventsaas.tasks.BaseTask; staff see it in the admin and can send
    it again ("Retry selected"), once per row: a retry that fails again is a new row.
    """

    class Stage(models.TextChoices):
        RUN = "run", _("failed after its retries")
        ENQUEUE = "enqueue", _("could not be enqueued")

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    # Celery's id of the failed run; empty when the task never reached the broker.
    task_id = models.CharField(_("task id"), max_length=64, blank=True)
    task_name = models.CharField(_("task"), max_length=200)
    stage = models.CharField(_("stage"), max_length=10, choices=Stage.choices, default=Stage.RUN)
    args = models.JSONField(_("positional arguments"), default=list, blank=True, encoder=DjangoJSONEncoder)
    kwargs = models.JSONField(_("keyword arguments"), default=dict, blank=True, encoder=DjangoJSONEncoder)
    error = models.TextField(_("error"))
    traceback = models.TextField(_("traceback"), blank=True)
    retries = models.PositiveSmallIntegerField(_("retries before failing"), default=0)
    failed_at = MillisecondDateTimeField(_("failed at"), default=timezone.now, editable=False)
    retried_at = MillisecondDateTimeField(_("retried at"), null=True, blank=True)
    retried_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        models.SET_NULL,
        verbose_name=_("retried by"),
        null=True,
        blank=True,
        related_name="+",
        db_index=False,  # never queried by user
    )

    class Meta:
        db_table = "tenants_failedtask"
        verbose_name = _("failed task")
        verbose_name_plural = _("failed tasks")
        ordering = ["-failed_at"]
        constraints = [
            # One record per failed run, even if the failure handler runs twice.
            # "> ''" rather than "!= ''": MongoDB partial indexes cannot express "not equal".
            models.UniqueConstraint(fields=["task_id"], condition=Q(task_id__gt=""), name="failedtask_unique_task_id")
        ]
        # The admin lists newest first, optionally filtered by task.
        indexes = [
            models.Index(fields=["failed_at"], name="failedtask_failed_at"),
            models.Index(fields=["task_name", "failed_at"], name="failedtask_task_failed_at"),
        ]

    def __str__(self):
        return f"{self.task_name} @ {self.failed_at:%Y-%m-%d %H:%M}"

    @property
    def is_retried(self) -> bool:
        return self.retried_at is not None
