"""The Celery application, configured from Django settings (the CELERY_* names).

Tasks run on workers: `celery -A eventsaas worker` and exactly one `celery -A
eventsaas beat`. With REDIS_URL (or CELERY_BROKER_URL) the broker is that server;
the embedded default has none, and its broker is a folder (kombu's filesystem
transport, CELERY_BROKER_FOLDER) that the worker and beat started by bin/run
read. docs/workers.md explains the choice and the reliability settings.

Every task uses eventsaas.tasks.BaseTask: transient errors are retried with
backoff, and a task that still fails is recorded as a eventsaas.FailedTask.
"""

import os
from pathlib import Path

from celery import Celery
from celery.beat import PersistentScheduler

from eventsaas.broker import is_folder_broker

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "eventsaas.settings")


class BeatScheduler(PersistentScheduler):
    """Celery's file-backed scheduler, creating the folder of its state file first (var/ is not in git)."""

    def setup_schedule(self):
        Path(self.schedule_filename).parent.mkdir(parents=True, exist_ok=True)
        super().setup_schedule()


app = Celery("eventsaas", task_cls="eventsaas.tasks:BaseTask")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()


@app.on_after_configure.connect
def create_broker_folders(sender, **kwargs):
    """The folder broker expects its folders to exist; whichever process comes first makes them."""
    if not is_folder_broker(sender.conf.broker_url):
        return
    options = sender.conf.broker_transport_options or {}
    for key in ("data_folder_in", "data_folder_out", "control_folder"):
        if options.get(key):
            Path(options[key]).mkdir(parents=True, exist_ok=True)
