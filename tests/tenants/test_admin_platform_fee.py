"""Staff set an organization's platform fee in the Django admin: a "Platform fee" fieldset, a bounded
percentage, an audit entry, and the next checkout uses it."""

import pytest
from django.test import Client

from billing.services.fees import FeeRate, platform_fee_rate
from eventsaas.models import AuditLog
from tests.factories import TenantFactory, UserFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def staff_client():
    client = Client()
    client.force_login(UserFactory(email="staff@example.com", is_staff=True, is_superuser=True))
    return client


def _form(tenant, **fee) -> dict:
    return {
        "name": tenant.name,
        "slug": tenant.slug,
        "platform_fee_basis_points": "",
        "platform_fee_fixed": "",
        "memberships-TOTAL_FORMS": "0",
        "memberships-INITIAL_FORMS": "0",
        "memberships-MIN_NUM_FORMS": "0",
        "memberships-MAX_NUM_FORMS": "1000",
        **fee,
    }


def test_change_page_shows_the_platform_fee_fieldset_with_the_default(staff_client, settings):
    settings.PLATFORM_FEE_BASIS_POINTS, settings.PLATFORM_FEE_FIXED = 250, 30
    tenant = TenantFactory()
    page = staff_client.get(f"/admin/tenants/tenant/{tenant.pk}/change/").content.decode()
    assert "Platform fee" in page
    assert "platform's default: 250 basis points plus 30" in page
    assert 'name="platform_fee_basis_points"' in page and 'name="platform_fee_fixed"' in page


def test_staff_override_is_saved_audited_and_used(staff_client, settings):
    settings.PLATFORM_FEE_BASIS_POINTS, settings.PLATFORM_FEE_FIXED = 250, 30
    tenant = TenantFactory()
    response = staff_client.post(
        f"/admin/tenants/tenant/{tenant.pk}/change/", _form(tenant, platform_fee_basis_points="100")
    )
    assert response.status_code == 302
    tenant.refresh_from_db()
    assert (tenant.platform_fee_basis_points, tenant.platform_fee_fixed) == (100, None)
    assert platform_fee_rate(tenant=tenant) == FeeRate(100, 30)
    entry = AuditLog.objects.get(action="tenant.platform_fee_changed")
    assert entry.tenant_id == tenant.pk and entry.data["basis_points"] == 100 and entry.data["by_staff"]

    staff_client.post(f"/admin/tenants/tenant/{tenant.pk}/change/", _form(tenant, platform_fee_basis_points="100"))
    assert AuditLog.objects.filter(action="tenant.platform_fee_changed").count() == 1  # nothing changed: no entry


@pytest.mark.parametrize(("field", "value"), [("platform_fee_basis_points", "10001"), ("platform_fee_fixed", "-1")])
def test_staff_cannot_set_a_fee_beyond_the_bounds(staff_client, field, value):
    tenant = TenantFactory()
    response = staff_client.post(f"/admin/tenants/tenant/{tenant.pk}/change/", _form(tenant, **{field: value}))
    assert response.status_code == 200
    assert field in response.context["adminform"].form.errors
    tenant.refresh_from_db()
    assert getattr(tenant, field) is None
    assert not AuditLog.objects.filter(action="tenant.platform_fee_changed").exists()
