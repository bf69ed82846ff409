"""Every model in the admin opens for staff: its list, and its add form where adding is allowed (a computed
read-only field must cope with an object that is not saved yet)."""

import pytest
from django.contrib import admin
from django.urls import reverse

from tests.factories import TicketTypeFactory

pytestmark = pytest.mark.django_db

MODEL_ADMINS = sorted(admin.site._registry.items(), key=lambda item: item[0]._meta.label)


@pytest.mark.parametrize(("model", "model_admin"), MODEL_ADMINS, ids=[m._meta.label for m, _a in MODEL_ADMINS])
def test_the_list_and_the_add_form_open(admin_client, rf, admin_user, model, model_admin):
    TicketTypeFactory()  # something to list where it matters most (computed columns)
    opts = model._meta
    assert admin_client.get(reverse(f"admin:{opts.app_label}_{opts.model_name}_changelist")).status_code == 200

    request = rf.get("/")
    request.user = admin_user
    expected = 200 if model_admin.has_add_permission(request) else 403
    assert admin_client.get(reverse(f"admin:{opts.app_label}_{opts.model_name}_add")).status_code == expected
