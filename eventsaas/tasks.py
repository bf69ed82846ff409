"""Task infrastructure: the base class of every Celery task, and enqueueing after commit.

Tasks themselves live in each app's `tasks.py`; they take primary keys, load
inside the task, call one service and are idempotent (STYLE.md). What they
share is here:

- `BaseTask` (the app's default task class, see eventsaas/celery.py): late
  acknowledgement, retries with exponential backoff and jitter for transient
  errors only, and a `eventsaas.FailedTask` row when a task fails for good.
- `enqueue_on_commit(task, **kwargs)`: send the task once the transaction that
  caused it has committed, so a worker never looks for a row that is not there
  yet (or never will be, after a rollback).
"""

import json
import logging
import smtplib
import sys
from collections.abc import Iterable, Mapping
from functools import partial
from typing import Any

from celery import Task
from celery.contrib.django.task import DjangoTask
from django.conf import settings
from django.core.serializers.json import DjangoJSONEncoder
from django.db import InterfaceError, OperationalError, transaction
from kombu.exceptions import OperationalError as BrokerOperationalError

from eventsaas.maintenance import maintenance_is_on

logger = logging.getLogger(__name__)


class TransientError(Exception):
    """A failure worth trying again later (a remote service busy or rate-limiting, a lock held).

    Services raise it, or wrap a library's exception in it, to ask BaseTask for a retry.
    """


# Only failures that may go away by themselves are retried: the network, the
# database connection, the broker, an SMTP server hanging up. A bug, invalid
# data or a missing row fails the same way every time, so retrying it only
# delays the FailedTask record an operator needs to see.
TRANSIENT_ERRORS = (
    TransientError,
    ConnectionError,
    TimeoutError,
    smtplib.SMTPServerDisconnected,
    smtplib.SMTPConnectError,
    OperationalError,
    InterfaceError,
    BrokerOperationalError,
)


class BaseTask(DjangoTask):
    """Default task class: retry transient errors with backoff, record the final failure.

    Backoff is exponential with full jitter (a random wait between 0 and 5, 10,
    20, 40, 80 s) so tasks that failed together do not retry together, capped
    at 10 minutes; that cap stays below the broker's visibility timeout
    (settings.CELERY_BROKER_TRANSPORT_OPTIONS), or a waiting retry would be
    delivered twice. Late acknowledgement and requeue on a lost worker are
    safe because tasks are idempotent; a task that is not sets `acks_late = False`.
    """

    autoretry_for = TRANSIENT_ERRORS
    max_retries = 5
    retry_backoff = 5
    retry_backoff_max = 600
    retry_jitter = True
    acks_late = True
    reject_on_worker_lost = True
    #: False for a periodic task whose next run is its retry: its failures are
    #: logged, not stored every few seconds.
    record_failure = True

    def __call__(self, *args, **kwargs):
        if maintenance_is_on() and not self.request.is_eager:
            # Nothing is written while the data moves to another database (eventsaas/maintenance.py):
            # the task goes back to the broker and runs once maintenance is off, on the new database.
            raise self.retry(countdown=settings.MAINTENANCE_RETRY_SECONDS, max_retries=sys.maxsize)
        return super().__call__(*args, **kwargs)

    def on_failure(self, exc, task_id, args, kwargs, einfo):
        """Called once the task has failed for good (retries spent, or an error that is not retried)."""
        super().on_failure(exc, task_id, args, kwargs, einfo)
        if not self.record_failure:
            return
        record_task_failure(
            task_name=self.name,
            task_id=task_id or "",
            args=args,
            kwargs=kwargs,
            error=exc,
            traceback=str(getattr(einfo, "traceback", "") or ""),
            retries=getattr(self.request, "retries", 0) or 0,
        )


def record_task_failure(
    *,
    task_name: str,
    task_id: str = "",
    args: Iterable[Any] | None = (),
    kwargs: Mapping[str, Any] | None = None,
    error: BaseException,
    traceback: str = "",
    retries: int = 0,
    stage: str | None = None,
) -> None:
    """Store a FailedTask; never raises, because it runs inside failure handling."""
    from eventsaas.models import FailedTask
    from eventsaas.services import failed_task_record

    try:
        failed_task_record(
            task_name=task_name,
            task_id=task_id,
            args=_json_safe(list(args or ())),
            kwargs=_json_safe(dict(kwargs or {})),
            error=f"{type(error).__name__}: {error}",
            traceback=traceback,
            retries=retries,
            stage=stage or FailedTask.Stage.RUN,
        )
    except Exception:
        logger.exception("Could not record the failure of task %s[%s]", task_name, task_id)


def _json_safe(value: Any) -> Any:
    """Arguments as JSON (UUIDs and dates as strings); anything else as its repr, rather than no record."""
    return json.loads(json.dumps(value, cls=_LenientEncoder))


class _LenientEncoder(DjangoJSONEncoder):
    def default(self, o):
        try:
            return super().default(o)
        except TypeError:
            return repr(o)


def send_task(task: Task, *, args: Iterable[Any] = (), kwargs: dict[str, Any] | None = None) -> bool:
    """Publish the task now; False (and a FailedTask to retry from the admin) when the broker refuses.

    The request or task that called this has already committed its own work,
    so a broker outage must not turn it into an error page: the task is kept
    as a FailedTask of stage "enqueue" instead.
    """
    try:
        task.apply_async(args=tuple(args), kwargs=kwargs or {})
    except Exception as exc:
        logger.exception("Could not enqueue task %s; recorded as a failed task", task.name)
        record_task_failure(task_name=task.name, args=args, kwargs=kwargs, error=exc, stage="enqueue")
        return False
    return True


def enqueue_on_commit(task: Task, /, **kwargs: Any) -> None:
    """Send `task` with these keyword arguments once the current transaction commits.

    Outside a transaction (and always on MongoDB, whose backend runs on_commit
    callbacks at once) it is sent right away. Pass primary keys, not model
    instances: the task loads what it needs when it runs.
    """
    transaction.on_commit(partial(send_task, task, kwargs=kwargs))


def task_by_name(name: str) -> Task:
    """The registered task called `name` (importing every app's tasks module first); KeyError if none."""
    from eventsaas.celery import app

    app.loader.import_default_modules()
    return app.tasks[name]
