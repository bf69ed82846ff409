"""Celery application. Workers arrive with the workers issue; until then tasks
run in-process (CELERY_TASK_ALWAYS_EAGER) when no REDIS_URL is configured."""

import os

from celery import Celery

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "eventsaas.settings")

app = Celery("eventsaas")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()
