"""The platform's write operations: the audit log and failed tasks."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from functools import partial
from typing import TYPE_CHECKING, Any, TypedDict

from django.db import DatabaseError, IntegrityError, transaction

from eventsaas.fields import now_as_stored
from eventsaas.models import AuditLog, FailedTask

if TYPE_CHECKING:
    from tenants.models import ActingUser, Tenant, User


class AuditEntry(TypedDict, total=False):
    """One entry of audit_log_record_many: audit_log_record's keywords."""

    action: str
    tenant: Tenant | None
    tenant_id: uuid.UUID | None
    event_id: uuid.UUID | None
    actor_user: ActingUser
    actor_guest_id: uuid.UUID | None
    object_id: uuid.UUID | None
    data: dict[str, Any] | None


def _account(actor_user: ActingUser) -> User | None:
    """The account an audit record names: an authenticated user, never the anonymous one."""
    if actor_user is not None and actor_user.is_authenticated:
        return actor_user
    return None


#: The entries of the audit_log_together() block running in this thread, if any.
_together: ContextVar[list[AuditLog] | None] = ContextVar("audit_log_together", default=None)


@contextmanager
def audit_log_together() -> Iterator[None]:
    """The audit entries recorded inside the block are written together in one insert when it ends.

    For a unit of work that records several through different services (a payment: the order paid, its
    holder guest created and coming): one statement instead of one per entry. A block inside another
    joins it. If the block fails, what it recorded is still written where writes stand alone (MongoDB);
    on SQL its transaction rolls them back with everything else.
    """
    if _together.get() is not None:
        yield
        return
    rows: list[AuditLog] = []
    token = _together.set(rows)
    try:
        yield
    except BaseException:
        _together.reset(token)
        _write_quietly(rows)
        raise
    _together.reset(token)
    if rows:
        AuditLog.objects.bulk_create(rows)


def _write_quietly(rows: list[AuditLog]) -> None:
    if not rows:
        return
    try:
        with transaction.atomic():  # a savepoint on SQL, where the failed transaction refuses it
            AuditLog.objects.bulk_create(rows)
    except DatabaseError:
        pass  # the block's own error is the one to raise


def audit_log_record(
    *,
    action: str,
    tenant: Tenant | None = None,
    tenant_id: uuid.UUID | None = None,
    event_id: uuid.UUID | None = None,
    actor_user: ActingUser = None,
    actor_guest_id: uuid.UUID | None = None,
    object_id: uuid.UUID | None = None,
    data: dict[str, Any] | None = None,
) -> AuditLog:
    """Append one audit entry; every service that changes state calls this (tenant or tenant_id)."""
    entry = AuditEntry(
        action=action,
        tenant=tenant,
        tenant_id=tenant_id,
        event_id=event_id,
        actor_user=actor_user,
        actor_guest_id=actor_guest_id,
        object_id=object_id,
        data=data,
    )
    return audit_log_record_many(entries=[entry])[0]


def audit_log_record_many(*, entries: list[AuditEntry]) -> list[AuditLog]:
    """Append several audit entries in one insert (or to the running audit_log_together() block); each dict takes
    audit_log_record's keywords."""
    rows = []
    for entry in entries:
        tenant = entry.get("tenant")
        rows.append(
            AuditLog(
                tenant_id=tenant.pk if tenant is not None else entry.get("tenant_id"),
                event_id=entry.get("event_id"),
                action=entry["action"],
                actor_user=_account(entry.get("actor_user")),
                actor_guest_id=entry.get("actor_guest_id"),
                object_id=entry.get("object_id"),
                data=entry.get("data") or {},
            )
        )
    together = _together.get()
    if together is not None:
        together.extend(rows)
        return rows
    return AuditLog.objects.bulk_create(rows) if rows else []


def failed_task_record(
    *,
    task_name: str,
    args: list[Any] | tuple[Any, ...],
    kwargs: dict[str, Any],
    error: str,
    traceback: str = "",
    task_id: str = "",
    retries: int = 0,
    stage: str = FailedTask.Stage.RUN,
) -> FailedTask:
    """Store a task that failed for good. Idempotent per Celery task id (a failure handler may run twice)."""
    row = partial(
        FailedTask.objects.create,
        task_name=task_name,
        args=args,
        kwargs=kwargs,
        error=error,
        traceback=traceback,
        retries=retries,
        stage=stage,
    )
    if not task_id:
        return row()
    try:
        with transaction.atomic():
            return row(task_id=task_id)
    except IntegrityError:
        return FailedTask.objects.get(task_id=task_id)


def failed_task_retry(*, failed_task: FailedTask, acting_user: ActingUser) -> bool:
    """Send the task again with its stored arguments, after commit; False if this row was already retried.

    The compare-and-set on `retried_at` makes two staff members clicking
    "Retry" at once send it once. If the retried run fails again, that failure
    is a new FailedTask row.
    """
    from eventsaas.tasks import send_task, task_by_name

    task = task_by_name(failed_task.task_name)  # KeyError for a task that no longer exists
    now = now_as_stored()
    retried_by = _account(acting_user)
    won = FailedTask.objects.filter(pk=failed_task.pk, retried_at__isnull=True).update(
        retried_at=now, retried_by=retried_by
    )
    if not won:
        return False
    failed_task.retried_at = now
    audit_log_record(
        action="task.retried",
        actor_user=acting_user,
        object_id=failed_task.pk,
        data={"task": failed_task.task_name, "task_id": failed_task.task_id},
    )
    transaction.on_commit(partial(send_task, task, args=failed_task.args, kwargs=failed_task.kwargs))
    return True
