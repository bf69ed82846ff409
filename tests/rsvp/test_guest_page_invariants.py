"""The guest's kept page is always the page a fresh render gives, under random sequences of the real services.

The household machine's rules (tests/rsvp/test_household_invariants.py: answers of every shape, organizer
edits and recorded answers, regrouping, code regenerations, deadlines moved both ways, change requests
and their decisions) run here too; after every step, each guest's phone (a session logged in when the
guest was invited) opens their page through the process's memory (rsvp/guest_page_cache.py) and the
page must equal one rendered afresh. Pages stay kept from step to step, so a write that changed no
version, or a deadline that passed unseen, shows here as a stale page. A control runs the machine with
the versions' changes lost and asserts that the checker finds the stale page.
"""

import re
from unittest import mock

import pytest
from django.core.cache import caches
from django.test import Client
from hypothesis import seed
from hypothesis.extra.django import TestCase
from hypothesis.stateful import invariant, run_state_machine_as_test

from events import guest_view_versions
from guests.models import Guest
from rsvp import guest_page_cache
from rsvp.views import SESSION_CODE, SESSION_GUEST
from tests.rsvp.test_household_invariants import HouseholdMachine, Step
from tests.support.backends import ON_MONGODB
from tests.support.machines import control_settings, machine_settings

ANSWER_URL = "/rsvp/answer/"
TOKEN = re.compile(r'name="csrfmiddlewaretoken" value="[^"]*"')
# Each step opens every guest's page twice (kept, then rendered): fewer examples than the household machine's.
MACHINE_SETTINGS = machine_settings(ci_examples=4 if ON_MONGODB else 20, steps=15)


def page_html(client: Client) -> tuple[int, str]:
    response = client.get(ANSWER_URL)
    return response.status_code, TOKEN.sub("", response.content.decode()) or response.get("Location", "")


class GuestPageMachine(HouseholdMachine):
    def __init__(self):
        super().__init__()
        self.phones: dict = {}

    def phone(self, guest_pk) -> Client:
        """The guest's phone, logged in with the code the guest had when first checked (right after the invitation)."""
        if guest_pk not in self.phones:
            phone = Client()
            session = phone.session
            session[SESSION_GUEST], session[SESSION_CODE] = str(guest_pk), Guest.objects.get(pk=guest_pk).code
            session.save()
            self.phones[guest_pk] = phone
        return self.phones[guest_pk]

    @invariant()
    def every_invariant_holds(self):
        """Each guest's page through memory equals a fresh render; the pages stay kept for the next step."""
        for pk in self.order:
            phone = self.phone(pk)
            served = page_html(phone)
            with mock.patch.object(guest_page_cache, "_keepable", lambda request: False):
                rendered = page_html(phone)
            assert served == rendered, f"after {self.step.kind}: a stale page served to {pk}"
        # What the household machine's own invariant leaves for the next step's rules.
        self.before = self.rows()
        self.step = Step(kind="between steps")


class GuestPageInvariantsTest(TestCase):
    def setUp(self):
        caches["pages"].clear()

    def test_the_kept_page_is_always_a_fresh_render(self):
        served_from_memory = mock.Mock(wraps=guest_page_cache._served)
        with mock.patch.object(guest_page_cache, "_served", served_from_memory):
            run_state_machine_as_test(GuestPageMachine, settings=MACHINE_SETTINGS)

        print(f"\n{served_from_memory.call_count} guest pages served from memory and found fresh")
        # The check compared kept pages, not only renders.
        assert served_from_memory.call_count > MACHINE_SETTINGS.max_examples * 10


# The control: the versions' changes are lost, as if no write told anyone. The checker must see a stale page.
ControlMachine = seed(7)(type("GuestPageControlMachine", (GuestPageMachine,), {}))
CONTROL = control_settings(examples=100, steps=15)


@pytest.mark.skipif(ON_MONGODB, reason="the control checks the checker; the SQL passes run it")
class LostVersionControlTest(TestCase):
    def test_a_write_that_changes_no_version_is_caught(self):
        caches["pages"].clear()
        with mock.patch.object(guest_view_versions, "_replace_versions", lambda event_ids: None):
            with self.assertRaises(AssertionError) as caught:
                run_state_machine_as_test(ControlMachine, settings=CONTROL)

        assert "stale page" in str(caught.exception), caught.exception
