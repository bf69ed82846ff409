"""Write operations on organizations, memberships and invitations."""

import secrets
import uuid
from collections.abc import Callable
from datetime import timedelta

from django.conf import settings
from django.core import signing
from django.core.exceptions import PermissionDenied, ValidationError
from django.core.mail import send_mail
from django.db import IntegrityError, transaction
from django.template.loader import render_to_string
from django.utils import timezone, translation
from django.utils.text import slugify
from django.utils.translation import gettext as _

from eventsaas.mail import email_subject
from eventsaas.services import audit_log_record
from eventsaas.tasks import enqueue_on_commit
from tenants.models import ActingUser, Invitation, Membership, Role, Tenant, User
from tenants.token_state import user_token_state_forget, user_tokens_revoke

#: Makes the absolute link of an emailed token (the view knows the host).
UrlBuilder = Callable[[str], str]

INVITATION_VALIDITY = timedelta(days=7)


def _unique_tenant_slug(name: str) -> str:
    base = slugify(name)[:50] or "org"
    slug, n = base, 1
    while Tenant.objects.filter(slug=slug).exists():
        n += 1
        slug = f"{base}-{n}"
    return slug


def tenant_create(*, name: str, owner: User) -> Tenant:
    """Create an organization with `owner` as its owner.

    The slug is derived from the name; the unique constraint is the final
    arbiter when two sign-ups race for the same slug.
    """
    for _attempt in range(5):
        try:
            with transaction.atomic():
                tenant = Tenant.objects.create(name=name, slug=_unique_tenant_slug(name))
        except IntegrityError:
            continue
        Membership.objects.create(tenant=tenant, user=owner, role=Role.OWNER)
        if owner.is_email_verified:
            Tenant.objects.filter(pk=tenant.pk).update(verified_at=owner.email_verified_at)
            tenant.verified_at = owner.email_verified_at
        audit_log_record(action="tenant.created", tenant=tenant, actor_user=owner, object_id=tenant.pk)
        return tenant
    raise ValidationError(_("Could not choose a unique address for this organization; try another name."))


def user_signup(
    *,
    email: str,
    password: str,
    organization_name: str,
    first_name: str = "",
    last_name: str = "",
    verification_url_builder: UrlBuilder | None = None,
) -> tuple[User, Tenant]:
    """Create an organizer account and its first organization (both or neither), and ask to verify the email.

    Until the address is verified, the organization can set up events but sends
    no email to guests and sells no tickets.
    """
    with transaction.atomic():
        user, tenant = _user_signup(
            email=email,
            password=password,
            organization_name=organization_name,
            first_name=first_name,
            last_name=last_name,
        )
    if verification_url_builder is not None:
        email_verification_send(user=user, url_builder=verification_url_builder)
    return user, tenant


def _user_signup(
    *, email: str, password: str, organization_name: str, first_name: str = "", last_name: str = ""
) -> tuple[User, Tenant]:
    email = User.objects.normalize_email(email).lower()
    if User.objects.filter(email=email).exists():
        raise ValidationError({"email": _("An account with this email already exists.")})
    user = User(email=email, first_name=first_name, last_name=last_name)
    user.set_password(password)
    user.full_clean(exclude=["password"])
    user.save()
    try:
        tenant = tenant_create(name=organization_name, owner=user)
    except Exception:
        # Compensate rather than rely on the transaction (a no-op on MongoDB):
        # an account without its organization would block the email forever.
        user.delete()
        raise
    return user, tenant


# --- email verification ------------------------------------------------------------------------

EMAIL_VERIFICATION_SALT = "tenants.email-verification"
EMAIL_VERIFICATION_VALIDITY = timedelta(days=3)


def email_verification_token(*, user: User) -> str:
    """A signed, expiring token naming the account and the address it confirms (a changed address voids it)."""
    return signing.dumps({"user": str(user.pk), "email": user.email}, salt=EMAIL_VERIFICATION_SALT)


def email_verification_send(*, user: User, url_builder: UrlBuilder) -> None:
    """Email the verification link (`url_builder(token)` makes it absolute) from a worker, in this language.

    A task, as every email: an SMTP server that is down then delays the email (retried) instead of failing
    the sign-up, which has already stored the account and its organization."""
    from tenants.tasks import email_verification_send_task

    link = url_builder(email_verification_token(user=user))
    enqueue_on_commit(
        email_verification_send_task, user_id=str(user.pk), link=link, language=translation.get_language()
    )


def email_verification_deliver(*, user: User, link: str) -> bool:
    """Send the verification email now (the task's work); False if the address is verified meanwhile."""
    if user.is_email_verified:
        return False
    send_mail(
        subject=email_subject(_("Confirm your email address for eventsaas")),
        message=render_to_string("tenants/email/verify_email.txt", {"user": user, "link": link}),
        from_email=settings.DEFAULT_FROM_EMAIL,
        recipient_list=[user.email],
    )
    return True


def email_verify(*, token: str) -> User | None:
    """The account the link confirms, now verified; None for a bad, expired or outdated link."""
    try:
        data = signing.loads(
            token, salt=EMAIL_VERIFICATION_SALT, max_age=int(EMAIL_VERIFICATION_VALIDITY.total_seconds())
        )
    except signing.BadSignature:
        return None
    if not isinstance(data, dict) or not isinstance(data.get("user"), str):
        return None
    user = User.objects.filter(pk=data["user"], email=data.get("email"), is_active=True).first()
    if user is None:
        return None
    email_mark_verified(user=user)
    return user


class OrganizationNotVerified(PermissionDenied):
    """No owner of the organization has confirmed their email address yet."""

    api_code = "email_unverified"


def tenant_require_verified(*, tenant: Tenant, action: str) -> None:
    """Refuse `action` ("email" or "sell") until an owner has verified their email, with a message saying how."""
    if tenant.is_verified:
        return
    if action == "sell":
        message = _(
            "Confirm your email address first: open the link we emailed you (or send it again from your "
            "account page). Until then you can set up events and ticket types, but not sell tickets."
        )
    else:
        message = _(
            "Confirm your email address first: open the link we emailed you (or send it again from your "
            "account page). Until then you can set up events, but not send emails to guests."
        )
    raise OrganizationNotVerified(message)


def email_mark_verified(*, user: User) -> None:
    """Record that the person reads this address; their organizations may now email guests and sell tickets.

    Compare-and-set on the empty timestamp: verifying twice records once.
    """
    now = timezone.now()
    if User.objects.filter(pk=user.pk, email_verified_at__isnull=True).update(email_verified_at=now):
        user.email_verified_at = now
        audit_log_record(action="user.email_verified", actor_user=user, object_id=user.pk)
    owned = Membership.objects.filter(user_id=user.pk, role=Role.OWNER).values_list("tenant_id", flat=True)
    Tenant.objects.filter(pk__in=list(owned), verified_at__isnull=True).update(verified_at=user.email_verified_at)


def invitation_create(
    *,
    tenant: Tenant,
    email: str,
    role: str,
    acting_membership: Membership,
    accept_url_builder: Callable[[Invitation], str],
) -> Invitation:
    """Invite a teammate by email. Only owners invite; the link is valid for a week."""
    if not acting_membership.can_manage_team:
        raise PermissionDenied(_("Only an owner can invite teammates."))
    if role not in Role.values or role == Role.OWNER:
        raise ValidationError({"role": _("Choose admin, viewer or door staff.")})
    email = User.objects.normalize_email(email).lower()
    if Membership.objects.for_tenant(tenant).filter(user__email=email).exists():
        raise ValidationError({"email": _("This person is already a member.")})
    pending = Invitation.objects.for_tenant(tenant).filter(
        email=email, accepted_at__isnull=True, expires_at__gt=timezone.now()
    )
    if pending.exists():
        # A second link would leave two live ones with different roles; resending keeps one.
        raise ValidationError(
            {"email": _("This address already has a pending invitation: send it again from the list below.")}
        )
    invitation = Invitation.objects.create(
        tenant=tenant,
        email=email,
        role=role,
        token=secrets.token_urlsafe(32),
        invited_by=acting_membership.user,
        expires_at=timezone.now() + INVITATION_VALIDITY,
    )
    _invitation_email_send(invitation=invitation, inviter=acting_membership.user, accept_url_builder=accept_url_builder)
    audit_log_record(
        action="invitation.created",
        tenant=tenant,
        actor_user=acting_membership.user,
        object_id=invitation.pk,
        data={"email": email, "role": role},
    )
    return invitation


def _invitation_email_send(
    *, invitation: Invitation, inviter: User, accept_url_builder: Callable[[Invitation], str]
) -> None:
    """Email the invitation from a worker, in this language (a down SMTP server delays it, see above)."""
    from tenants.tasks import invitation_email_send_task

    enqueue_on_commit(
        invitation_email_send_task,
        invitation_id=str(invitation.pk),
        inviter_id=str(inviter.pk),
        accept_url=accept_url_builder(invitation),
        language=translation.get_language(),
    )


def invitation_email_deliver(*, invitation: Invitation, inviter: User | None, accept_url: str) -> bool:
    """Send the invitation email now (the task's work); False once it was accepted meanwhile."""
    if invitation.accepted_at is not None:
        return False
    context = {"invitation": invitation, "accept_url": accept_url, "inviter": inviter}
    send_mail(
        subject=email_subject(_("You are invited to join %(org)s on eventsaas"), org=invitation.tenant.name),
        message=render_to_string("tenants/email/invitation.txt", context),
        from_email=settings.DEFAULT_FROM_EMAIL,
        recipient_list=[invitation.email],
    )
    return True


def invitation_accept(*, invitation: Invitation, user: User) -> Membership:
    """Join the invitation's organization. Single use: the accepted_at compare-and-set decides.

    Bound to the invited address: a link forwarded, leaked or opened by someone
    else's account joins nobody.
    """
    now = timezone.now()
    if user.email.lower() != invitation.email.lower():
        raise PermissionDenied(
            _("This invitation was sent to %(email)s; log in with that address to accept it.")
            % {"email": invitation.email}
        )
    if not invitation.is_usable(now):
        raise ValidationError(_("This invitation has expired or was already used."))
    claimed = Invitation.objects.filter(pk=invitation.pk, accepted_at__isnull=True).update(
        accepted_at=now, accepted_by=user
    )
    if not claimed:
        raise ValidationError(_("This invitation has expired or was already used."))
    membership, created = Membership.objects.get_or_create(
        tenant_id=invitation.tenant_id, user=user, defaults={"role": invitation.role}
    )
    audit_log_record(
        action="invitation.accepted",
        tenant=invitation.tenant,
        actor_user=user,
        object_id=invitation.pk,
        data={"role": membership.role, "new_member": created},
    )
    return membership


@transaction.atomic
def user_signup_from_invitation(
    *, invitation: Invitation, password: str, first_name: str = "", last_name: str = ""
) -> tuple[User, Membership]:
    """Create the invited person's account and accept the invitation (both or neither)."""
    if User.objects.filter(email=invitation.email).exists():
        raise ValidationError({"email": _("An account with this email already exists; log in to accept.")})
    # The invitation came by email to this address: that proves it.
    user = User(email=invitation.email, first_name=first_name, last_name=last_name, email_verified_at=timezone.now())
    user.set_password(password)
    user.save()
    try:
        membership = invitation_accept(invitation=invitation, user=user)
    except Exception:
        user.delete()  # see user_signup: no orphan account on any database
        raise
    return user, membership


# --- access changes: each one ends the person's API tokens (tenants/token_state.py) -------------

TEAM_ROLES = (Role.OWNER, Role.ADMIN, Role.VIEWER, Role.DOOR)
_STEP_DOWN_ATTEMPTS = 5


class LastOwner(ValidationError):
    """The change would leave the organization without an owner."""


def _check_team_change(*, membership: Membership, acting_membership: Membership) -> None:
    if not acting_membership.can_manage_team:
        raise PermissionDenied(_("Only an owner can change the team."))
    if membership.tenant_id != acting_membership.tenant_id:
        raise PermissionDenied(_("Only an owner can change the team."))


def _other_owners_count(*, membership: Membership) -> int:
    return Membership.objects.filter(tenant_id=membership.tenant_id, role=Role.OWNER).exclude(pk=membership.pk).count()


def _owner_step_down(*, membership: Membership, role: str) -> None:
    """Turn an owner into `role`, refusing when no other owner would remain.

    Without a multi-row transaction: read the organization's team_version, count the
    other owners, change this row (compare-and-set on role=owner), then move
    team_version on from the value read. Whoever moves it first keeps the change;
    a step-down that lost the race (someone else took an owner away since its count)
    puts its row back and counts again. On SQL databases the version update also
    waits for a concurrent one to commit and then sees the new value, so the same
    holds inside transactions.
    """
    for _attempt in range(_STEP_DOWN_ATTEMPTS):
        version = Tenant.objects.filter(pk=membership.tenant_id).values_list("team_version", flat=True).first()
        if version is None or _other_owners_count(membership=membership) < 1:
            raise LastOwner(_("An organization needs at least one owner: make someone else an owner first."))
        if not Membership.objects.filter(pk=membership.pk, role=Role.OWNER).update(role=role):
            raise ValidationError(_("This teammate's role changed meanwhile; reload the page."))
        if Tenant.objects.filter(pk=membership.tenant_id, team_version=version).update(team_version=version + 1):
            membership.role = role
            return
        Membership.objects.filter(pk=membership.pk, role=role).update(role=Role.OWNER)  # lost: undo, count again
    raise ValidationError(_("The team is changing right now; try again."))


def membership_role_change(*, membership: Membership, role: str, acting_membership: Membership) -> Membership:
    """Give a teammate another role; their API tokens stop at once (a refresh gets the new role).

    An owner may make others owners and step down, but the last owner cannot be demoted.
    """
    _check_team_change(membership=membership, acting_membership=acting_membership)
    if role not in TEAM_ROLES:
        raise ValidationError({"role": _("Choose owner, admin, viewer or door staff.")})
    previous = membership.role
    if previous == role:
        return membership
    if previous == Role.OWNER:
        _owner_step_down(membership=membership, role=role)
    elif not Membership.objects.filter(pk=membership.pk, role=previous).update(role=role):
        raise ValidationError(_("This teammate's role changed meanwhile; reload the page."))
    membership.role = role
    user_tokens_revoke(user_id=membership.user_id)
    audit_log_record(
        action="membership.role_changed",
        tenant_id=membership.tenant_id,
        actor_user=acting_membership.user,
        object_id=membership.pk,
        data={"user": str(membership.user_id), "from": previous, "to": role},
    )
    return membership


def _membership_delete(*, membership: Membership, acting_user: User, action: str) -> None:
    previous = membership.role
    if previous == Role.OWNER:
        # Stepping down first puts the removal behind the same last-owner guard as a demotion.
        _owner_step_down(membership=membership, role=Role.VIEWER)
    Membership.objects.filter(pk=membership.pk).delete()
    user_tokens_revoke(user_id=membership.user_id)
    audit_log_record(
        action=action,
        tenant_id=membership.tenant_id,
        actor_user=acting_user,
        object_id=membership.pk,
        data={"user": str(membership.user_id), "role": previous},
    )


def membership_remove(*, membership: Membership, acting_membership: Membership) -> None:
    """Take a teammate out of the organization; their API tokens stop at once. Never the last owner."""
    _check_team_change(membership=membership, acting_membership=acting_membership)
    _membership_delete(membership=membership, acting_user=acting_membership.user, action="membership.removed")


def membership_leave(*, membership: Membership) -> None:
    """Leave an organization (any role may); the last owner cannot."""
    _membership_delete(membership=membership, acting_user=membership.user, action="membership.left")


def invitation_revoke(*, invitation: Invitation, acting_membership: Membership) -> None:
    """Withdraw a pending invitation: its link stops working. An accepted one is left alone."""
    if not acting_membership.can_manage_team or invitation.tenant_id != acting_membership.tenant_id:
        raise PermissionDenied(_("Only an owner can change the team."))
    if not Invitation.objects.filter(pk=invitation.pk, accepted_at__isnull=True).delete()[0]:
        raise ValidationError(_("This invitation was already accepted or withdrawn."))
    audit_log_record(
        action="invitation.revoked",
        tenant_id=invitation.tenant_id,
        actor_user=acting_membership.user,
        object_id=invitation.pk,
        data={"email": invitation.email, "role": invitation.role},
    )


def invitation_resend(
    *, invitation: Invitation, acting_membership: Membership, accept_url_builder: Callable[[Invitation], str]
) -> Invitation:
    """Send a pending invitation again, valid for another week from now (same link)."""
    if not acting_membership.can_manage_team or invitation.tenant_id != acting_membership.tenant_id:
        raise PermissionDenied(_("Only an owner can change the team."))
    expires_at = timezone.now() + INVITATION_VALIDITY
    if not Invitation.objects.filter(pk=invitation.pk, accepted_at__isnull=True).update(expires_at=expires_at):
        raise ValidationError(_("This invitation was already accepted or withdrawn."))
    invitation.expires_at = expires_at
    _invitation_email_send(invitation=invitation, inviter=acting_membership.user, accept_url_builder=accept_url_builder)
    audit_log_record(
        action="invitation.resent",
        tenant_id=invitation.tenant_id,
        actor_user=acting_membership.user,
        object_id=invitation.pk,
        data={"email": invitation.email},
    )
    return invitation


def membership_changed_by_staff(*, membership: Membership, acting_user: ActingUser, removed: bool = False) -> None:
    """Django admin changed or deleted a membership (the admin wrote the row): end that person's tokens."""
    user_tokens_revoke(user_id=membership.user_id)
    audit_log_record(
        action="membership.removed" if removed else "membership.changed",
        tenant_id=membership.tenant_id,
        actor_user=acting_user,
        object_id=membership.pk,
        data={"user": str(membership.user_id), "role": membership.role, "by_staff": True},
    )


def platform_fee_changed_by_staff(*, tenant: Tenant, acting_user: ActingUser) -> None:
    """Django admin changed the organization's platform fee override (the admin wrote the row): on the record."""
    audit_log_record(
        action="tenant.platform_fee_changed",
        tenant_id=tenant.pk,
        actor_user=acting_user,
        object_id=tenant.pk,
        data={"basis_points": tenant.platform_fee_basis_points, "fixed": tenant.platform_fee_fixed, "by_staff": True},
    )


def user_deactivated(*, user: User, acting_user: ActingUser) -> None:
    """The account was switched off: every token and refresh token ends, and it cannot log in again."""
    user_tokens_revoke(user_id=user.pk, families=True)
    audit_log_record(action="user.deactivated", actor_user=acting_user, object_id=user.pk)


def user_deleted(*, user_id: uuid.UUID) -> None:
    user_token_state_forget(user_id=user_id)


def user_password_change(*, user: User, password: str, acting_user: ActingUser = None) -> None:
    """Set a new password. Every API token ends (User.save does it for every path) and a login lockout ends."""
    from tenants.throttling import login_lockout_clear

    user.set_password(password)
    user.save(update_fields=["password"])
    login_lockout_clear(email=user.email)
    audit_log_record(action="user.password_changed", actor_user=acting_user or user, object_id=user.pk)
