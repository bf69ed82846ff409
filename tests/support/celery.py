"""Switching the project's Celery app to another broker for a test, and back."""

from contextlib import contextmanager

from kombu import pools

from eventsaas.celery import app
from guests import activity


def reset_connections() -> None:
    """Forget pooled broker connections, so the next publish uses the current broker_url."""
    activity._sender.reset()  # first: a publish under way finishes on the connections it started with
    # kombu keeps pools in a process-wide registry keyed by connection: close and forget them all.
    pools.reset()
    app._pool = None
    amqp = app.__dict__.get("amqp")
    if amqp is not None:
        amqp._producer_pool = None
    activity._broker_gate.reset()


@contextmanager
def celery_config(**overrides):
    """Override app.conf settings (e.g. broker_url, task_always_eager) for the duration of the block."""
    missing = object()
    saved = {name: app.conf.get(name, missing) for name in overrides}
    app.conf.update(overrides)
    reset_connections()
    try:
        yield app
    finally:
        for name, value in saved.items():
            if value is missing:
                app.conf.pop(name, None)
            else:
                app.conf[name] = value
        reset_connections()
