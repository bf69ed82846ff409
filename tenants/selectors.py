import uuid

from django.contrib.auth.models import AnonymousUser
from django.db.models import QuerySet
from django.http import Http404

from tenants.models import Invitation, Membership, Role, Tenant, User


def membership_for(*, user: User | AnonymousUser, tenant_slug: str) -> Membership:
    """The user's membership in the organization at `tenant_slug`, or 404.

    "No such organization" and "not a member" are the same 404 so slugs cannot be probed.
    """
    tenant = Tenant.objects.filter(slug=tenant_slug).first()
    membership = None
    if tenant is not None and user.is_authenticated:
        membership = Membership.objects.for_tenant(tenant).filter(user_id=user.pk).first()
    if tenant is None or membership is None:
        raise Http404("No such organization")
    membership.tenant = tenant
    return membership


def memberships_of(*, user: User) -> QuerySet[Membership]:
    return Membership.objects.filter(user_id=user.pk).select_related("tenant").order_by("tenant__name")


def team_members(*, tenant: Tenant) -> QuerySet[Membership]:
    return Membership.objects.for_tenant(tenant).select_related("user").order_by("user__email")


def pending_invitations(*, tenant: Tenant) -> QuerySet[Invitation]:
    return Invitation.objects.for_tenant(tenant).filter(accepted_at__isnull=True)


def invitation_by_token(*, token: str) -> Invitation:
    invitation = Invitation.objects.select_related("tenant").filter(token=token).first()
    if invitation is None:
        raise Http404("No such invitation")
    return invitation


def event_organizer_emails(*, tenant: Tenant, contact_email: str = "") -> list[str]:
    """Who hears about an event: the organization's owners and admins, plus the event's contact address."""
    emails = list(
        Membership.objects.for_tenant(tenant)
        .filter(role__in=[Role.OWNER, Role.ADMIN])
        .exclude(user__email="")
        .values_list("user__email", flat=True)
    )
    if contact_email:
        emails.append(contact_email)
    return sorted({email.lower() for email in emails})


def member_email(*, tenant: Tenant, user_id: uuid.UUID | str) -> str:
    """The email of this member of the organization; "" for someone who is not (or no longer) a member."""
    return (
        Membership.objects.for_tenant(tenant)
        .filter(user_id=user_id)
        .exclude(user__email="")
        .values_list("user__email", flat=True)
        .first()
        or ""
    )
