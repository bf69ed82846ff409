"""Tasks that exist only for the tests: they record calls and fail on demand."""

import threading

from celery import shared_task

from eventsaas.services import audit_log_record
from eventsaas.tasks import TransientError

#: Calls seen by the tasks below, in this process (the in-process worker shares it).
calls: list[dict] = []
_lock = threading.Lock()
#: Set to True to make fails_until_fixed succeed.
state = {"fixed": False}


def _called(name, **kwargs):
    with _lock:
        calls.append({"task": name, **kwargs})


@shared_task(name="tests.record_call")
def record_call_task(*, marker: str) -> None:
    _called("tests.record_call", marker=marker)
    audit_log_record(action="tests.task_ran", data={"marker": marker})


@shared_task(name="tests.always_transient", max_retries=2, retry_backoff=False, default_retry_delay=0.1)
def always_transient_task(*, marker: str) -> None:
    _called("tests.always_transient", marker=marker)
    raise TransientError("the remote service is busy")


@shared_task(name="tests.broken")
def broken_task(*, marker: str) -> None:
    _called("tests.broken", marker=marker)
    raise ValueError("a bug, not worth retrying")


@shared_task(name="tests.fails_until_fixed", max_retries=1, retry_backoff=False, default_retry_delay=0.1)
def fails_until_fixed_task(*, marker: str) -> None:
    _called("tests.fails_until_fixed", marker=marker)
    if not state["fixed"]:
        raise TransientError("still broken")
    audit_log_record(action="tests.task_ran", data={"marker": marker})
