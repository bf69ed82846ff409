import uuid
from typing import Any, ClassVar, TypeAlias

from django.conf import settings
from django.contrib.auth.models import AbstractUser, AnonymousUser, BaseUserManager
from django.db import models
from django.utils import timezone
from django.utils.translation import gettext_lazy as _

from eventsaas.fields import MillisecondDateTimeField
from eventsaas.models import TenantScopedQuerySet


class UserManager(BaseUserManager):
    use_in_migrations = True

    def _create_user(self, email, password, **extra_fields):
        if not email:
            raise ValueError("An email address is required")
        user = self.model(email=self.normalize_email(email).lower(), **extra_fields)
        user.set_password(password)
        user.save(using=self._db)
        return user

    def create_user(self, email, password=None, **extra_fields):
        extra_fields.setdefault("is_staff", False)
        extra_fields.setdefault("is_superuser", False)
        return self._create_user(email, password, **extra_fields)

    def create_superuser(self, email, password=None, **extra_fields):
        extra_fields.setdefault("is_staff", True)
        extra_fields.setdefault("is_superuser", True)
        return self._create_user(email, password, **extra_fields)


class User(AbstractUser):
    """An organizer account: email is the login, there is no username."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    username = None  # type: ignore[assignment]  # no username: the email is the login
    email = models.EmailField(_("email address"), unique=True)
    # AbstractUser's stamps, stored to the millisecond like every other (eventsaas/fields.py).
    last_login = MillisecondDateTimeField(_("last login"), blank=True, null=True)
    date_joined = MillisecondDateTimeField(_("date joined"), default=timezone.now)

    # Part of every organizer access token; bumped when the account's access changes
    # (removed from an organization, new role, deactivated, new password): older tokens stop working.
    token_version = models.PositiveIntegerField(_("token version"), default=0, editable=False)
    # Set when the person opened the emailed verification link (or signed up from an emailed invitation).
    email_verified_at = MillisecondDateTimeField(_("email verified at"), null=True, blank=True, editable=False)

    USERNAME_FIELD = "email"
    REQUIRED_FIELDS: ClassVar[list[str]] = []

    # Not Django's UserManager (its methods take a username), hence the ignore.
    objects = UserManager()  # type: ignore[assignment,misc]

    def __str__(self):
        return self.email

    @property
    def is_email_verified(self) -> bool:
        return self.email_verified_at is not None

    def save(self, *args: Any, **kwargs: Any) -> None:
        # Django's own AbstractBaseUser.save() tells password validators about a new
        # password the same way (`_password` is set by set_password, not by a hash
        # upgrade at login). Here, so that every path that sets a password (reset
        # link, account page, admin, `manage.py changepassword`) ends the API tokens.
        password_changed = getattr(self, "_password", None) is not None and not self._state.adding
        super().save(*args, **kwargs)
        if password_changed:
            from tenants.token_state import user_tokens_revoke

            user_tokens_revoke(user_id=self.pk, families=True)


class Tenant(models.Model):
    """An organization: the unit of isolation. Everything it owns carries tenant_id."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    name = models.CharField(_("name"), max_length=200)
    slug = models.SlugField(_("slug"), max_length=60, unique=True)
    created_at = MillisecondDateTimeField(_("created at"), default=timezone.now, editable=False)
    # Set once, when an owner has verified their email address. Until then the organization
    # sets up events but sends no email to guests and sells no tickets.
    verified_at = MillisecondDateTimeField(_("verified at"), null=True, blank=True, editable=False)
    # Bumped by every change that takes an owner away (demotion, removal, leaving), as a
    # compare-and-set: the change that moves it from the value it read wins, the other one
    # undoes itself. So two owners demoting each other at once never leave zero owners,
    # without a multi-row transaction (tenants/services.py, _owner_step_down).
    team_version = models.PositiveIntegerField(_("team version"), default=0, editable=False)
    # The platform's application fee on this organization's paid orders, set by staff in the admin;
    # empty means the platform's default (settings PLATFORM_FEE_PERCENT, PLATFORM_FEE_FIXED).
    # Percent in basis points (250 = 2.5 %), fixed in the order currency's minor units.
    platform_fee_basis_points = models.PositiveIntegerField(
        _("platform fee (basis points)"), null=True, blank=True, help_text=_("250 is 2.5 %. Empty: the default.")
    )
    platform_fee_fixed = models.PositiveIntegerField(
        _("platform fee per order (in cents)"), null=True, blank=True, help_text=_("Empty: the default.")
    )

    class Meta:
        verbose_name = _("organization")
        verbose_name_plural = _("organizations")
        ordering = ["name"]

    def __str__(self):
        return self.name

    @property
    def is_verified(self) -> bool:
        return self.verified_at is not None


class Role(models.TextChoices):
    OWNER = "owner", _("Owner")
    ADMIN = "admin", _("Admin")
    VIEWER = "viewer", _("Viewer")
    # Reads like a viewer and checks tickets in at the door; changes nothing else.
    DOOR = "door", _("Door staff")


CHECK_IN_ROLES = frozenset({Role.OWNER, Role.ADMIN, Role.DOOR})


class Membership(models.Model):
    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    # Indexed by the (tenant, user) unique constraint and the (user, tenant) index below.
    tenant = models.ForeignKey(
        Tenant, models.CASCADE, verbose_name=_("organization"), related_name="memberships", db_index=False
    )
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, models.CASCADE, verbose_name=_("user"), related_name="memberships", db_index=False
    )
    role = models.CharField(_("role"), max_length=10, choices=Role, default=Role.VIEWER)
    created_at = MillisecondDateTimeField(_("created at"), default=timezone.now, editable=False)

    objects = TenantScopedQuerySet.as_manager()

    class Meta:
        verbose_name = _("membership")
        verbose_name_plural = _("memberships")
        constraints = [models.UniqueConstraint(fields=["tenant", "user"], name="membership_unique_user_per_tenant")]
        # Resolving the active tenant looks memberships up by user.
        indexes = [models.Index(fields=["user", "tenant"], name="membership_user_tenant")]

    def __str__(self):
        return f"{self.user} @ {self.tenant} ({self.role})"

    @property
    def can_edit(self) -> bool:
        return self.role in {Role.OWNER, Role.ADMIN}

    @property
    def can_check_in(self) -> bool:
        return self.role in CHECK_IN_ROLES

    @property
    def can_manage_team(self) -> bool:
        return self.role == Role.OWNER


class Invitation(models.Model):
    """A teammate invitation; the token in the emailed link is the only secret."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    tenant = models.ForeignKey(
        Tenant, models.CASCADE, verbose_name=_("organization"), related_name="invitations", db_index=False
    )
    email = models.EmailField(_("email address"))
    role = models.CharField(_("role"), max_length=10, choices=Role, default=Role.ADMIN)
    token = models.CharField(_("token"), max_length=64, unique=True, editable=False)
    invited_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, models.SET_NULL, verbose_name=_("invited by"), null=True, related_name="+"
    )
    created_at = MillisecondDateTimeField(_("created at"), default=timezone.now, editable=False)
    expires_at = MillisecondDateTimeField(_("expires at"))
    accepted_at = MillisecondDateTimeField(_("accepted at"), null=True, blank=True)
    accepted_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        models.SET_NULL,
        verbose_name=_("accepted by"),
        null=True,
        blank=True,
        related_name="+",
    )

    objects = TenantScopedQuerySet.as_manager()

    class Meta:
        verbose_name = _("invitation")
        verbose_name_plural = _("invitations")
        ordering = ["-created_at"]
        indexes = [models.Index(fields=["tenant", "created_at"], name="invitation_tenant_created")]

    def __str__(self):
        return f"{self.email} -> {self.tenant}"

    def is_usable(self, now=None) -> bool:
        return self.accepted_at is None and (now or timezone.now()) < self.expires_at


class RefreshTokenFamily(models.Model):
    """One API login's chain of refresh tokens: each refresh replaces the token by the next generation.

    Refreshing is a compare-and-set on `generation` (one row, atomic on every
    database): presenting generation n moves the family to n + 1 once. Presenting
    an older generation again means a copy of a used token is in someone's hands,
    so the whole family is revoked, and so are the access tokens it issued
    (they carry the family's id). Logout revokes it too.
    """

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, models.CASCADE, verbose_name=_("user"), related_name="+", db_index=False
    )
    generation = models.PositiveIntegerField(_("generation"), default=0)
    created_at = MillisecondDateTimeField(_("created at"), default=timezone.now, editable=False)
    last_used_at = MillisecondDateTimeField(_("last refreshed at"), null=True, blank=True)
    # The refresh tokens of a family never outlive its first one: then the person logs in again.
    expires_at = MillisecondDateTimeField(_("expires at"))
    revoked_at = MillisecondDateTimeField(_("revoked at"), null=True, blank=True)
    revoked_reason = models.CharField(_("why it was revoked"), max_length=30, blank=True)

    class Meta:
        verbose_name = _("API login")
        verbose_name_plural = _("API logins")
        indexes = [
            # Revoking every login of a user (new password, deactivation).
            models.Index(fields=["user", "revoked_at"], name="tokenfamily_user_revoked"),
            # The daily cleanup of expired families.
            models.Index(fields=["expires_at"], name="tokenfamily_expires"),
        ]

    def __str__(self):
        return f"{self.user_id} #{self.generation}"

    @property
    def is_revoked(self) -> bool:
        return self.revoked_at is not None


#: Who a service acts for: an organizer's account, the anonymous visitor of a page (`request.user`), or
#: None for the system (tasks, commands). The audit log keeps only an authenticated account.
ActingUser: TypeAlias = "User | AnonymousUser | None"
