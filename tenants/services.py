"""Write operations on organizations, memberships and invitations, and on failed tasks."""

import secrets
from datetime import timedelta
from functools import partial

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.exceptions import PermissionDenied, ValidationError
from django.core.mail import send_mail
from django.db import IntegrityError, transaction
from django.template.loader import render_to_string
from django.utils import timezone
from django.utils.text import slugify
from django.utils.translation import gettext as _

from tenants.models import AuditLog, FailedTask, Invitation, Membership, Role, Tenant

User = get_user_model()

INVITATION_VALIDITY = timedelta(days=7)


def audit_log_record(
    *,
    action,
    tenant=None,
    tenant_id=None,
    event_id=None,
    actor_user=None,
    actor_guest_id=None,
    object_id=None,
    data=None,
):
    """Append one audit entry; every service that changes state calls this (tenant or tenant_id)."""
    return AuditLog.objects.create(
        tenant_id=tenant.pk if tenant is not None else tenant_id,
        event_id=event_id,
        action=action,
        actor_user=actor_user if actor_user is not None and actor_user.is_authenticated else None,
        actor_guest_id=actor_guest_id,
        object_id=object_id,
        data=data or {},
    )


def _unique_tenant_slug(name: str) -> str:
    base = slugify(name)[:50] or "org"
    slug, n = base, 1
    while Tenant.objects.filter(slug=slug).exists():
        n += 1
        slug = f"{base}-{n}"
    return slug


def tenant_create(*, name: str, owner) -> Tenant:
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
        audit_log_record(action="tenant.created", tenant=tenant, actor_user=owner, object_id=tenant.pk)
        return tenant
    raise ValidationError(_("Could not choose a unique address for this organization; try another name."))


@transaction.atomic
def user_signup(*, email: str, password: str, organization_name: str, first_name: str = "", last_name: str = ""):
    """Create an organizer account and its first organization (both or neither)."""
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


def invitation_create(*, tenant, email: str, role: str, acting_membership, accept_url_builder) -> Invitation:
    """Invite a teammate by email. Only owners invite; the link is valid for a week."""
    if not acting_membership.can_manage_team:
        raise PermissionDenied(_("Only an owner can invite teammates."))
    if role not in Role.values or role == Role.OWNER:
        raise ValidationError({"role": _("Choose admin or viewer.")})
    email = User.objects.normalize_email(email).lower()
    if Membership.objects.for_tenant(tenant).filter(user__email=email).exists():
        raise ValidationError({"email": _("This person is already a member.")})
    invitation = Invitation.objects.create(
        tenant=tenant,
        email=email,
        role=role,
        token=secrets.token_urlsafe(32),
        invited_by=acting_membership.user,
        expires_at=timezone.now() + INVITATION_VALIDITY,
    )
    accept_url = accept_url_builder(invitation)
    context = {"invitation": invitation, "accept_url": accept_url, "inviter": acting_membership.user}
    send_mail(
        subject=_("You are invited to join %(org)s on eventsaas") % {"org": tenant.name},
        message=render_to_string("tenants/email/invitation.txt", context),
        from_email=settings.DEFAULT_FROM_EMAIL,
        recipient_list=[email],
    )
    audit_log_record(
        action="invitation.created",
        tenant=tenant,
        actor_user=acting_membership.user,
        object_id=invitation.pk,
        data={"email": email, "role": role},
    )
    return invitation


def invitation_accept(*, invitation: Invitation, user) -> Membership:
    """Join the invitation's organization. Single use: the accepted_at compare-and-set decides."""
    now = timezone.now()
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
def user_signup_from_invitation(*, invitation: Invitation, password: str, first_name: str = "", last_name: str = ""):
    """Create the invited person's account and accept the invitation (both or neither)."""
    if User.objects.filter(email=invitation.email).exists():
        raise ValidationError({"email": _("An account with this email already exists; log in to accept.")})
    user = User(email=invitation.email, first_name=first_name, last_name=last_name)
    user.set_password(password)
    user.save()
    try:
        membership = invitation_accept(invitation=invitation, user=user)
    except Exception:
        user.delete()  # see user_signup: no orphan account on any database
        raise
    return user, membership


def failed_task_record(
    *, task_name, args, kwargs, error, traceback="", task_id="", retries=0, stage=FailedTask.Stage.RUN
) -> FailedTask:
    """Store a task that failed for good. Idempotent per Celery task id (a failure handler may run twice)."""
    fields = {
        "task_name": task_name,
        "args": args,
        "kwargs": kwargs,
        "error": error,
        "traceback": traceback,
        "retries": retries,
        "stage": stage,
    }
    if not task_id:
        return FailedTask.objects.create(**fields)
    try:
        with transaction.atomic():
            return FailedTask.objects.create(task_id=task_id, **fields)
    except IntegrityError:
        return FailedTask.objects.get(task_id=task_id)


def failed_task_retry(*, failed_task: FailedTask, acting_user) -> bool:
    """Send the task again with its stored arguments, after commit; False if this row was already retried.

    The compare-and-set on `retried_at` makes two staff members clicking
    "Retry" at once send it once. If the retried run fails again, that failure
    is a new FailedTask row.
    """
    from eventsaas.tasks import send_task, task_by_name

    task = task_by_name(failed_task.task_name)  # KeyError for a task that no longer exists
    now = timezone.now()
    retried_by = acting_user if acting_user is not None and acting_user.is_authenticated else None
    won = FailedTask.objects.filter(pk=failed_task.pk, retried_at__isnull=True).update(
        retried_at=now, retried_by=retried_by
    )
    if not won:
        return False
    failed_task.retried_at = now
    audit_log_record(
        action="task.retried",
        actor_user=acting_user,
        object_id=failed_task.pk,
        data={"task": failed_task.task_name, "task_id": failed_task.task_id},
    )
    transaction.on_commit(partial(send_task, task, args=failed_task.args, kwargs=failed_task.kwargs))
    return True
