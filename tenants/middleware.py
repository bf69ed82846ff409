from django.contrib.auth.views import redirect_to_login
from django.core.exceptions import PermissionDenied
from django.utils.translation import gettext as _

from tenants.selectors import membership_for

SAFE_METHODS = {"GET", "HEAD", "OPTIONS"}


def check_in_view(view):
    """Mark a page whose unsafe requests door staff may send too (checking tickets in), not only editors."""
    view.allows_check_in = True
    return view


def any_member_view(view):
    """Mark a page whose unsafe requests every member may send (leaving the organization is their own choice)."""
    view.allows_any_member = True
    return view


class TenantMiddleware:
    """The tenancy gate for organizer pages.

    Any URL carrying `tenant_slug` is resolved here, once: anonymous users go to
    the login page, non-members get a 404, and viewers cannot send unsafe
    requests. Views below read `request.tenant` and `request.membership`.
    """

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        request.tenant = None
        request.membership = None
        return self.get_response(request)

    def process_view(self, request, view_func, view_args, view_kwargs):
        tenant_slug = view_kwargs.pop("tenant_slug", None)
        if tenant_slug is None:
            return None
        if not request.user.is_authenticated:
            return redirect_to_login(request.get_full_path())
        membership = membership_for(user=request.user, tenant_slug=tenant_slug)
        if (
            request.method not in SAFE_METHODS
            and not membership.can_edit
            and not getattr(view_func, "allows_any_member", False)
        ):
            if not (getattr(view_func, "allows_check_in", False) and membership.can_check_in):
                raise PermissionDenied(_("Your role can view this organization but not change it."))
        request.tenant = membership.tenant
        request.membership = membership
        if request.session.get("active_tenant") != membership.tenant.slug:
            request.session["active_tenant"] = membership.tenant.slug
        return None
