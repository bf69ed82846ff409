"""The API's tenancy gate: role and organization come from the token's claims.

Organization endpoints call `organizer_tenant` first; it scopes the lookup by the organizations in the
token, so another organization's object is a 404 (never a 403), and a viewer's write is a 403. The
event-level gate built on it (`OrganizerEventApi`, `organizer_event`) is events' (events/permissions.py).
"""

from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy
from rest_framework import exceptions, permissions

from eventsaas.logs import log_context
from tenants.models import CHECK_IN_ROLES, Role, Tenant


class IsGuest(permissions.BasePermission):
    message = gettext_lazy("This endpoint is for guests.")

    def has_permission(self, request, view):
        return bool(request.user and request.user.is_authenticated and request.user.is_guest)


class IsOrganizer(permissions.BasePermission):
    message = gettext_lazy("This endpoint is for organizers.")

    def has_permission(self, request, view):
        return bool(request.user and request.user.is_authenticated and request.user.is_organizer)


WRITE_ROLES = {Role.OWNER, Role.ADMIN}


def check_role(identity, tenant_id, *, write: bool, check_in: bool = False) -> str:
    role = identity.role_in(tenant_id)
    if role is None:
        raise exceptions.NotFound()
    if check_in and role not in CHECK_IN_ROLES:
        raise exceptions.PermissionDenied(_("Your role cannot check tickets in."))
    if write and role not in WRITE_ROLES:
        raise exceptions.PermissionDenied(_("Your role can read this organization, not change it."))
    return role


def organizer_tenant(request, tenant_slug: str, *, write: bool = False) -> Tenant:
    tenant = Tenant.objects.filter(slug=tenant_slug, pk__in=request.user.tenant_ids).first()
    if tenant is None:
        raise exceptions.NotFound()
    check_role(request.user, tenant.pk, write=write)
    log_context(tenant_id=tenant.pk)
    return tenant
