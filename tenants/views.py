from django.contrib import messages
from django.contrib.auth import login
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied, ValidationError
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils.translation import gettext as _
from django.views.decorators.http import require_http_methods

from tenants import selectors, services
from tenants.forms import InvitationForm, InvitationSignupForm, SignupForm


def landing(request):
    return render(request, "landing.html")


@require_http_methods(["GET", "POST"])
def signup(request):
    form = SignupForm(request.POST if request.method == "POST" else None)
    if request.method == "POST" and form.is_valid():
        try:
            user, tenant = services.user_signup(**form.cleaned_data)
        except ValidationError as error:
            form.add_error(None, error)
        else:
            login(request, user, backend="django.contrib.auth.backends.ModelBackend")
            messages.success(request, _("Welcome! Your organization is ready; create your first event."))
            return redirect("events:list", tenant_slug=tenant.slug)
    return render(request, "tenants/signup.html", {"form": form}, status=400 if form.errors else 200)


@login_required
def home(request):
    """Land in the last active organization, or choose one."""
    memberships = list(selectors.memberships_of(user=request.user))
    active = request.session.get("active_tenant")
    if active and any(m.tenant.slug == active for m in memberships):
        return redirect("events:list", tenant_slug=active)
    if len(memberships) == 1:
        return redirect("events:list", tenant_slug=memberships[0].tenant.slug)
    return render(request, "tenants/home.html", {"memberships": memberships})


@login_required
def switch(request):
    return render(request, "tenants/home.html", {"memberships": list(selectors.memberships_of(user=request.user))})


@require_http_methods(["GET", "POST"])
def team(request):
    form = InvitationForm(request.POST if request.method == "POST" else None)
    if request.method == "POST":
        if not request.membership.can_manage_team:
            raise PermissionDenied(_("Only an owner can invite teammates."))
        if form.is_valid():
            try:
                services.invitation_create(
                    tenant=request.tenant,
                    acting_membership=request.membership,
                    accept_url_builder=lambda inv: request.build_absolute_uri(
                        reverse("tenants:invitation_accept", args=[inv.token])
                    ),
                    **form.cleaned_data,
                )
            except ValidationError as error:
                form.add_error(None, error)
            else:
                messages.success(request, _("Invitation sent to %(email)s.") % {"email": form.cleaned_data["email"]})
                return redirect("tenants:team", tenant_slug=request.tenant.slug)
    context = {
        "form": form,
        "members": selectors.team_members(tenant=request.tenant),
        "invitations": selectors.pending_invitations(tenant=request.tenant),
    }
    return render(request, "tenants/team.html", context, status=400 if form.errors else 200)


@require_http_methods(["GET", "POST"])
def invitation_accept(request, token):
    invitation = selectors.invitation_by_token(token=token)
    form = InvitationSignupForm(request.POST if request.method == "POST" else None)
    usable = invitation.is_usable()
    if request.method == "POST" and usable:
        try:
            if request.user.is_authenticated:
                membership = services.invitation_accept(invitation=invitation, user=request.user)
            elif form.is_valid():
                user, membership = services.user_signup_from_invitation(invitation=invitation, **form.cleaned_data)
                login(request, user, backend="django.contrib.auth.backends.ModelBackend")
            else:
                membership = None
        except ValidationError as error:
            # The service may name a field the form does not have (e.g. "email"): show it above the form.
            form.add_error(None, error.messages)
            membership = None
        if membership is not None:
            messages.success(request, _("You joined %(org)s.") % {"org": invitation.tenant.name})
            return redirect("events:list", tenant_slug=invitation.tenant.slug)
    context = {"invitation": invitation, "form": form, "usable": usable}
    return render(request, "tenants/invitation_accept.html", context, status=400 if form.errors else 200)
