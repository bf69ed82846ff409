"""Inviting an address that already has a pending invitation: refused on the field, one invitation stays."""

from datetime import timedelta

import pytest
from django.urls import reverse

from tenants.models import Invitation, Role
from tests.support.commits import after_commit

pytestmark = pytest.mark.django_db


def team_url(tenant):
    return reverse("tenants:team", kwargs={"tenant_slug": tenant.slug})


def test_inviting_a_pending_address_again_is_refused_on_the_email_field(owner_client, tenant):
    with after_commit():
        owner_client.post(team_url(tenant), {"email": "mate@example.com", "role": Role.ADMIN})
        response = owner_client.post(team_url(tenant), {"email": "Mate@Example.com", "role": Role.VIEWER})

    assert response.status_code == 400
    assert response.context["form"].errors["email"] == [
        "This address already has a pending invitation: send it again from the list below."
    ]
    assert Invitation.objects.filter(tenant=tenant).count() == 1


def test_an_expired_invitation_does_not_block_a_new_one(owner_client, tenant, make_invitation):
    make_invitation(email="mate@example.com", expires_in=timedelta(days=-1))
    with after_commit():
        response = owner_client.post(team_url(tenant), {"email": "mate@example.com", "role": Role.ADMIN})

    assert response.status_code == 302
    assert Invitation.objects.filter(tenant=tenant).count() == 2
