"""The Celery application, configured from Django settings (the CELERY_* names).

With a broker server (REDIS_URL or CELERY_BROKER_URL) tasks run on workers:
`celery -A eventsaas worker` and exactly one `celery -A eventsaas beat`. The
embedded default has no broker server, so tasks run in the calling process
(CELERY_TASK_ALWAYS_EAGER). docs/workers.md explains the reliability settings.

Every task uses eventsaas.tasks.BaseTask: transient errors are retried with
backoff, and a task that still fails is recorded as a tenants.FailedTask.
"""

import os
from pathlib import Path

from celery import Celery
from celery.beat import PersistentScheduler

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "eventsaas.settings")


class BeatScheduler(PersistentScheduler):
    """Celery's file-backed scheduler, creating the folder of its state file first (var/ is not in git)."""

    def setup_schedule(self):
        Path(self.schedule_filename).parent.mkdir(parents=True, exist_ok=True)
        super().setup_schedule()


app = Celery("eventsaas", task_cls="eventsaas.tasks:BaseTask")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()
