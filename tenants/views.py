from django.contrib import messages
from django.contrib.auth import login, update_session_auth_hash
from django.contrib.auth import views as auth_views
from django.contrib.auth.decorators import login_required
from django.contrib.auth.forms import PasswordChangeForm
from django.core.exceptions import PermissionDenied, ValidationError
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse, reverse_lazy
from django.utils import timezone
from django.utils.http import url_has_allowed_host_and_scheme
from django.utils.translation import gettext as _
from django.views.decorators.http import require_http_methods, require_POST

from tenants import selectors, services
from tenants.forms import InvitationForm, InvitationSignupForm, SignupForm, TeamRoleForm
from tenants.middleware import any_member_view
from tenants.models import Invitation, Membership
from tenants.throttling import password_reset_is_throttled, signup_is_throttled, verification_email_is_throttled

MODEL_BACKEND = "django.contrib.auth.backends.ModelBackend"
TOO_MANY = 429


def landing(request):
    return render(request, "landing.html")


def _verification_url_builder(request):
    return lambda token: request.build_absolute_uri(reverse("tenants:email_verify", args=[token]))


@require_http_methods(["GET", "POST"])
def signup(request):
    form = SignupForm(request.POST if request.method == "POST" else None)
    status = 200
    if request.method == "POST" and signup_is_throttled(request):
        form.is_valid()
        form.add_error(None, _("Too many sign-ups from your network. Please try again in an hour."))
        status = TOO_MANY
    elif request.method == "POST" and form.is_valid():
        try:
            user, tenant = services.user_signup(
                **form.cleaned_data, verification_url_builder=_verification_url_builder(request)
            )
        except ValidationError as error:
            form.add_error(None, error)
        else:
            login(request, user, backend=MODEL_BACKEND)
            messages.success(
                request,
                _(
                    "Welcome! Your organization is ready; create your first event. We sent you an email: open "
                    "its link to confirm your address before you invite guests or sell tickets."
                ),
            )
            return redirect("events:list", tenant_slug=tenant.slug)
    if form.errors and status == 200:
        status = 400
    response = render(request, "tenants/signup.html", {"form": form}, status=status)
    if status == TOO_MANY:
        response["Retry-After"] = "3600"
    return response


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


def _accept_url_builder(request):
    return lambda invitation: request.build_absolute_uri(reverse("tenants:invitation_accept", args=[invitation.token]))


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
                    accept_url_builder=_accept_url_builder(request),
                    **form.cleaned_data,
                )
            except ValidationError as error:
                form.add_error(None, error)
            else:
                messages.success(request, _("Invitation sent to %(email)s.") % {"email": form.cleaned_data["email"]})
                return redirect("tenants:team", tenant_slug=request.tenant.slug)
    members = list(selectors.team_members(tenant=request.tenant))
    for member in members:
        member.role_form = TeamRoleForm(initial={"role": member.role}, prefix=str(member.pk))
    context = {
        "form": form,
        "members": members,
        "invitations": selectors.pending_invitations(tenant=request.tenant),
        "now": timezone.now(),
        "zone_name": timezone.get_current_timezone_name(),
    }
    return render(request, "tenants/team.html", context, status=400 if form.errors else 200)


def _teammate(request, membership_id) -> Membership:
    return get_object_or_404(Membership.objects.for_tenant(request.tenant).select_related("user"), pk=membership_id)


@require_POST
def team_member_role(request, membership_id):
    membership = _teammate(request, membership_id)
    form = TeamRoleForm(request.POST, prefix=str(membership.pk))
    if not form.is_valid():
        messages.error(request, _("Choose admin, viewer or door staff."))
    else:
        try:
            services.membership_role_change(
                membership=membership, role=form.cleaned_data["role"], acting_membership=request.membership
            )
        except ValidationError as error:
            messages.error(request, " ".join(error.messages))
        else:
            messages.success(
                request,
                _("%(email)s is now %(role)s.")
                % {"email": membership.user.email, "role": membership.get_role_display()},
            )
    return redirect("tenants:team", tenant_slug=request.tenant.slug)


@require_POST
def team_member_remove(request, membership_id):
    membership = _teammate(request, membership_id)
    try:
        services.membership_remove(membership=membership, acting_membership=request.membership)
    except ValidationError as error:
        messages.error(request, " ".join(error.messages))
    else:
        messages.success(request, _("%(email)s was removed from the team.") % {"email": membership.user.email})
    return redirect("tenants:team", tenant_slug=request.tenant.slug)


@any_member_view
@require_POST
def team_leave(request):
    try:
        services.membership_leave(membership=request.membership)
    except ValidationError as error:
        messages.error(request, " ".join(error.messages))
        return redirect("tenants:team", tenant_slug=request.tenant.slug)
    messages.success(request, _("You left %(org)s.") % {"org": request.tenant.name})
    return redirect("tenants:home")


def _pending_invitation(request, invitation_id) -> Invitation:
    return get_object_or_404(selectors.pending_invitations(tenant=request.tenant), pk=invitation_id)


@require_POST
def team_invitation_revoke(request, invitation_id):
    invitation = _pending_invitation(request, invitation_id)
    try:
        services.invitation_revoke(invitation=invitation, acting_membership=request.membership)
    except ValidationError as error:
        messages.error(request, " ".join(error.messages))
    else:
        messages.success(request, _("The invitation to %(email)s was withdrawn.") % {"email": invitation.email})
    return redirect("tenants:team", tenant_slug=request.tenant.slug)


@require_POST
def team_invitation_resend(request, invitation_id):
    invitation = _pending_invitation(request, invitation_id)
    try:
        services.invitation_resend(
            invitation=invitation,
            acting_membership=request.membership,
            accept_url_builder=_accept_url_builder(request),
        )
    except ValidationError as error:
        messages.error(request, " ".join(error.messages))
    else:
        messages.success(request, _("Invitation sent again to %(email)s.") % {"email": invitation.email})
    return redirect("tenants:team", tenant_slug=request.tenant.slug)


@require_http_methods(["GET", "POST"])
def invitation_accept(request, token):
    invitation = selectors.invitation_by_token(token=token)
    form = InvitationSignupForm(request.POST if request.method == "POST" else None)
    usable = invitation.is_usable()
    # The invitation is for one address: a logged-in account with another one cannot take it.
    wrong_account = request.user.is_authenticated and request.user.email.lower() != invitation.email.lower()
    status = 200
    if request.method == "POST" and usable and not wrong_account:
        membership = None
        try:
            if request.user.is_authenticated:
                membership = services.invitation_accept(invitation=invitation, user=request.user)
            elif signup_is_throttled(request):
                form.add_error(None, _("Too many sign-ups from your network. Please try again in an hour."))
                status = TOO_MANY
            elif form.is_valid():
                user, membership = services.user_signup_from_invitation(invitation=invitation, **form.cleaned_data)
                login(request, user, backend=MODEL_BACKEND)
        except ValidationError as error:
            # The service may name a field the form does not have (e.g. "email"): show it above the form.
            form.add_error(None, error.messages)
        if membership is not None:
            messages.success(request, _("You joined %(org)s.") % {"org": invitation.tenant.name})
            return redirect("events:list", tenant_slug=invitation.tenant.slug)
    elif request.method == "POST" and wrong_account:
        status = 403
    if form.errors and status == 200:
        status = 400
    context = {"invitation": invitation, "form": form, "usable": usable, "wrong_account": wrong_account}
    return render(request, "tenants/invitation_accept.html", context, status=status)


# --- the organizer's account: password, email verification ---------------------------------------


@login_required
@require_http_methods(["GET", "POST"])
def account(request):
    form = PasswordChangeForm(request.user, request.POST if request.method == "POST" else None)
    if request.method == "POST" and form.is_valid():
        services.user_password_change(
            user=request.user, password=form.cleaned_data["new_password1"], acting_user=request.user
        )
        # This browser stays logged in; other sessions and every API token end.
        update_session_auth_hash(request, request.user)
        messages.success(request, _("Your password is changed. Other devices and API tokens were logged out."))
        return redirect("tenants:account")
    return render(request, "tenants/account.html", {"form": form}, status=400 if form.errors else 200)


@login_required
@require_POST
def email_verification_resend(request):
    if request.user.is_email_verified:
        messages.info(request, _("Your email address is already confirmed."))
    elif verification_email_is_throttled(request, request.user):
        messages.error(request, _("We sent several emails already. Please wait an hour and check your spam folder."))
    else:
        services.email_verification_send(user=request.user, url_builder=_verification_url_builder(request))
        messages.success(request, _("We sent the link again to %(email)s.") % {"email": request.user.email})
    back = request.POST.get("next", "")
    if not url_has_allowed_host_and_scheme(back, allowed_hosts={request.get_host()}, require_https=request.is_secure()):
        back = reverse("tenants:account")
    return redirect(back)


def email_verify(request, token):
    """The emailed link: confirms the address. Works logged out too (the token names the account)."""
    user = services.email_verify(token=token)
    if user is None:
        return render(request, "tenants/email_verify_failed.html", status=400)
    messages.success(request, _("Thank you: %(email)s is confirmed.") % {"email": user.email})
    return redirect("tenants:home" if request.user.is_authenticated else "login")


class PasswordResetView(auth_views.PasswordResetView):
    """Django's reset form, limited per client and per address asked for (no inbox flooding)."""

    def form_valid(self, form):
        if password_reset_is_throttled(self.request, form.cleaned_data["email"]):
            form.add_error(None, _("Too many reset emails were asked for. Please try again in an hour."))
            response = self.render_to_response(self.get_context_data(form=form), status=TOO_MANY)
            response["Retry-After"] = "3600"
            return response
        return super().form_valid(form)


class PasswordResetConfirmView(auth_views.PasswordResetConfirmView):
    """The emailed link: a new password, a login lockout lifted, and the person logged in.

    This is the way back in for someone whose account an attacker keeps locked by
    guessing: it needs only their inbox, and the login here skips the lockout.
    """

    post_reset_login = True
    post_reset_login_backend = MODEL_BACKEND
    success_url = reverse_lazy("tenants:home")

    def form_valid(self, form):
        services.user_password_change(user=form.user, password=form.cleaned_data["new_password1"])
        # The link proved the address too.
        services.email_mark_verified(user=form.user)
        del self.request.session[auth_views.INTERNAL_RESET_SESSION_TOKEN]
        login(self.request, form.user, self.post_reset_login_backend)
        messages.success(self.request, _("Your new password is saved and you are logged in."))
        return redirect(self.get_success_url())
