"""Celery tasks of the tenants app: adapters that call one function each (docs/workers.md)."""

from celery import shared_task
from django.utils import translation

from tenants import services
from tenants.models import Invitation, User
from tenants.token_state import token_families_cleanup


@shared_task(name="tenants.token_families_cleanup", autoretry_for=(), record_failure=False)
def token_families_cleanup_task() -> int:
    """Daily: delete refresh-token families whose tokens have all expired."""
    return token_families_cleanup()


@shared_task(name="tenants.email_verification_send")
def email_verification_send_task(*, user_id: str, link: str, language: str) -> bool:
    """Send an organizer the link that verifies their email address."""
    user = User.objects.filter(pk=user_id).first()
    if user is None:
        return False  # deleted meanwhile
    with translation.override(language):
        return services.email_verification_deliver(user=user, link=link)


@shared_task(name="tenants.invitation_email_send")
def invitation_email_send_task(*, invitation_id: str, inviter_id: str, accept_url: str, language: str) -> bool:
    """Send a team invitation (new, or sent again)."""
    invitation = Invitation.objects.select_related("tenant").filter(pk=invitation_id).first()
    if invitation is None:
        return False  # withdrawn meanwhile
    with translation.override(language):
        return services.invitation_email_deliver(
            invitation=invitation, inviter=User.objects.filter(pk=inviter_id).first(), accept_url=accept_url
        )
