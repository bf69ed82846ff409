"""The team page's invitation form: it offers only the roles an invitation may carry."""

import pytest
from django.urls import reverse

from tenants.models import Invitation, Role
from tests.support.commits import after_commit

pytestmark = pytest.mark.django_db


def team_url(tenant):
    return reverse("tenants:team", kwargs={"tenant_slug": tenant.slug})


def test_invitation_form_does_not_offer_owner_and_starts_on_admin(owner_client, tenant):
    response = owner_client.get(team_url(tenant))

    field = response.context["form"]["role"]
    assert [value for value, _label in field.field.choices] == [Role.ADMIN, Role.VIEWER, Role.DOOR]
    assert field.value() == Role.ADMIN


def test_invitation_as_door_staff_is_accepted(owner_client, tenant):
    with after_commit():
        response = owner_client.post(team_url(tenant), {"email": "door@example.com", "role": Role.DOOR})

    assert response.status_code == 302
    assert Invitation.objects.get(tenant=tenant).role == Role.DOOR
