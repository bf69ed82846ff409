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

from celery import Celery, signals
from celery.beat import PersistentScheduler
from django.db import DatabaseError, close_old_connections, connections

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


# --- Database connections of a worker -----------------------------------------------------------------------------
# Celery's Django fixup closes every connection before and after each task, whatever CONN_MAX_AGE says: a new
# connection per task, a sixth of a Stripe webhook's time in a worker (bench/README.md). settings.CELERY_DB_REUSE_MAX
# makes it do that only every so many tasks; these two keep the connections as a web request does in between.


@signals.task_prerun.connect
def database_connections_checked(task=None, **kwargs):
    """Before a task, as before a request: a connection past CONN_MAX_AGE or broken is closed, a kept one is
    checked on its first use (CONN_HEALTH_CHECKS)."""
    if not task.request.is_eager:  # an eager task runs inside its caller, on the caller's connection
        close_old_connections()


@signals.task_postrun.connect
def database_connections_released(task=None, state=None, **kwargs):
    """After a task that succeeded, as after a request; after any other ending, closed.

    Celery closes always because Django cannot tell every broken connection: a soft time limit (SIGALRM)
    raised in the middle of a query leaves one that looks usable. Such a task never ends in SUCCESS.
    """
    if task.request.is_eager:
        return
    if state == "SUCCESS":
        close_old_connections()
        return
    for connection in connections.all(initialized_only=True):
        try:
            connection.close()
        except DatabaseError:  # already broken: closing it is all that was wanted
            pass
