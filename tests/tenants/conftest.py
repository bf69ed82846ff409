"""Helpers for the tenants tests: database snapshots and ready-made invitations."""

import secrets
from datetime import timedelta

import pytest
from django.utils import timezone

from events.models import Event
from eventsaas.models import AuditLog
from guests.models import Guest
from tenants.models import Invitation, Membership, Role, Tenant, User


def db_snapshot() -> dict:
    """Every row an organizer action could create or change, in a comparable form."""
    return {
        "users": sorted(User.objects.values_list("email", "password", "first_name", "last_name", "is_active")),
        "tenants": sorted(Tenant.objects.values_list("id", "name", "slug")),
        "memberships": sorted(Membership.objects.values_list("tenant_id", "user_id", "role")),
        "invitations": sorted(
            (str(row[0]), *row[1:])
            for row in Invitation.objects.values_list("id", "tenant_id", "email", "role", "accepted_at", "accepted_by")
        ),
        "events": sorted(Event.objects.values(), key=lambda row: row["id"]),
        "guests": sorted(Guest.objects.values(), key=lambda row: row["id"]),
        "audit_log_count": AuditLog.objects.count(),
    }


@pytest.fixture
def snapshot():
    return db_snapshot


@pytest.fixture
def make_invitation(tenant, owner):
    """An invitation to `tenant`, created directly (the invite flow itself is tested separately)."""

    def make(email="newcomer@example.com", role=Role.ADMIN, expires_in=timedelta(days=7), **extra):
        return Invitation.objects.create(
            tenant=tenant,
            email=email,
            role=role,
            token=secrets.token_urlsafe(32),
            invited_by=owner,
            expires_at=timezone.now() + expires_in,
            **extra,
        )

    return make
