"""Not collected by default (the name does not start with test_): tests/mongo/test_shadow.py
runs it in a separate pytest process to show that an unsupported query fails the run."""

import pytest

from guests.models import Guest


@pytest.mark.django_db
def test_uses_extra_which_mongodb_cannot_run():
    list(Guest.objects.extra(select={"shouting": "UPPER(last_name)"}))
