"""Celery tasks of the tenants app: adapters that call one function each (docs/workers.md)."""

from celery import shared_task

from tenants.token_state import token_families_cleanup


@shared_task(name="tenants.token_families_cleanup", autoretry_for=(), record_failure=False)
def token_families_cleanup_task() -> int:
    """Daily: delete refresh-token families whose tokens have all expired."""
    return token_families_cleanup()
