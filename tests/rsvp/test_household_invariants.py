"""Household answers always add up: invariants checked after every step of random sequences (Hypothesis).

A rule-based state machine builds random households (1-6 members, expected_guests
1-4 each) and walks random sequences of the real services: answers by random
members in both body shapes, organizer edits and organizer-recorded answers,
regrouping (join, merge, leave), code regenerations, deadline changes before and
after, and change requests after the deadline, approved or declined. After every
step it checks, from the rows themselves:

1. coming <=> num_guests >= 1, and num_guests == 0 otherwise;
2. a household's head count (rsvp.services.household_for) is the sum of its members' rows;
3. event_stats equals a recount of the rows;
4. a member's own decline (given by them, or recorded by an organizer) changed only
   through that member, or an explicit, confirmed per-member choice of the person
   answering, or an organizer approving a request that asked for it;
5. while answers are closed (deadline passed, or not published), a guest's step
   changes no answer; an answer never changes anyone outside the answerer's household;
6. an answer that was saved says what was sent: one number is the household's
   head count afterwards, a per-member choice is each listed member's row;
7. what the guest API keeps in memory (rsvp.household_cache) is what the database says: every
   guest's household read through the cache, with the token's group hint from login and with
   the current one, equals a fresh read (and stays kept from one step to the next, so a write
   that did not change the event's version would show here as a stale household).

The number of examples comes from a settings profile (tests/support/machines.py): `ci` (the default: fixed,
derandomized, the suite's run: 60 machines on SQL databases, 12 on the MongoDB
pass) or `deep` (HYPOTHESIS_PROFILE=deep: a larger,
random search; README, "Tests"). Three controls run the same machine against a
deliberately broken rule (or lost version changes) and assert that the checker
finds the failure; they run on the SQL passes.

Each example runs in a savepoint that is rolled back, inside the test case's
transaction (hypothesis.extra.django.TestCase), on SQLite and PostgreSQL alike;
on MongoDB, which has no rollback, each example's collections are emptied.
"""

import datetime as dt
import uuid
from dataclasses import dataclass, field
from unittest import mock

import pytest
from django.core.exceptions import ValidationError
from django.db import transaction
from django.utils import timezone
from hypothesis import seed
from hypothesis import strategies as st
from hypothesis.extra.django import TestCase
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, rule, run_state_machine_as_test

from events import guest_view_versions
from events.models import Event
from events.services import event_update
from guests import services as guest_services
from guests.models import Guest
from guests.selectors import event_stats
from rsvp import household_cache, services
from rsvp.apis import invitation_data
from rsvp.models import ChangeRequest
from rsvp.services import HouseholdAnswer, MemberChoice
from tenants.models import Role
from tests.factories import EventFactory, MembershipFactory, TenantFactory
from tests.support.backends import ON_MONGODB
from tests.support.machines import PROFILE, control_settings, machine_settings

# The MongoDB pass runs a smaller fixed sample: there every query goes to the wire-protocol test
# server (a Python process), and 60 machines took about a quarter of the pass. The rules and the
# compare-and-set are the same code on every backend; the SQL passes run the full sample.
CI_EXAMPLES = 12 if ON_MONGODB else 60

MACHINE = machine_settings(ci_examples=CI_EXAMPLES, steps=25, deep_examples=2000)

GUEST_STEPS = {"answer_one_number", "answer_per_member", "ask_for_a_change"}
ANSWER_STEPS = GUEST_STEPS | {"organizer_records"}
OWN = {Guest.AnsweredBy.SELF, Guest.AnsweredBy.ORGANIZER}
# Confirming twice as often as not: more answers get past the questions and change the households.
CONFIRMED = st.sampled_from([True, True, False])


@dataclass
class Step:
    """What the last step did, for the invariants that compare before and after."""

    kind: str = "setup"
    closed: bool = False  # answers were closed for guests when the step ran
    household: set = field(default_factory=set)  # the answering guest's household, as read before
    may_switch: set = field(default_factory=set)  # own declines this step may change
    saved: bool = False
    expected_rows: dict = field(default_factory=dict)  # pk -> (status, num_guests) the answer must have stored
    expected_total: int | None = None  # the household head count a saved one-number answer must leave


class Stats:
    examples = 0
    steps = 0
    saved_answers = 0
    refused = 0


class HouseholdMachine(RuleBasedStateMachine):
    def __init__(self):
        super().__init__()
        self._savepoint = transaction.atomic()
        self._savepoint.__enter__()
        Stats.examples += 1
        self.tenant = TenantFactory()
        self.owner = MembershipFactory(tenant=self.tenant, role=Role.OWNER).user
        self.event = EventFactory(
            tenant=self.tenant,
            starts_at=timezone.now() + dt.timedelta(days=30),
            rsvp_deadline=timezone.now() + dt.timedelta(days=10),
            questions=[{"key": "meal", "label": "Meal", "choices": ["Fish", "Meat"]}],
        )
        self.step = Step()
        self.before: dict = {}
        self.order: list = []  # guests in the order they were invited: draws map to the same guest every run
        self.login_groups: dict = {}  # each guest's group when invited: the hint its token would carry

    def teardown(self):
        transaction.set_rollback(True)
        self._savepoint.__exit__(None, None, None)

    # --- helpers ---------------------------------------------------------------------------------------

    def rows(self) -> dict:
        return {
            pk: {"status": status, "num": num, "by": by, "group": group}
            for pk, status, num, by, group in Guest.objects.for_event(self.event).values_list(
                "pk", "status", "num_guests", "answered_by_kind", "group_id"
            )
        }

    def guest(self, index: int) -> Guest:
        return Guest.objects.select_related("event", "tenant").get(pk=self.order[index % len(self.order)])

    def in_order(self, pks) -> list:
        return sorted(pks, key=self.order.index)

    def household_of(self, guest: Guest) -> set:
        if guest.group_id is None:
            return {guest.pk}
        return set(Guest.objects.for_event(self.event).filter(group_id=guest.group_id).values_list("pk", flat=True))

    def closed(self) -> bool:
        self.event.refresh_from_db()
        return self.event.rsvp_state() != self.event.RSVP_OPEN

    def begin(self, kind: str, guest: Guest | None = None) -> Step:
        Stats.steps += 1
        self.step = Step(kind=kind, closed=self.closed(), household=self.household_of(guest) if guest else set())
        return self.step

    def attempt(self, call) -> bool:
        """Run a service call; the rules' refusals are normal outcomes, anything else fails the test."""
        try:
            call()
        except (
            services.RsvpNeedsConfirmation,
            services.RsvpClosed,
            services.RsvpNotOpen,
            services.ChangeRequestNotNeeded,
            services.ChangeRequestAlreadyDecided,
            ValidationError,
        ):
            Stats.refused += 1
            return False
        Stats.saved_answers += 1
        return True

    # --- households --------------------------------------------------------------------------------------

    @initialize(households=st.lists(st.lists(st.integers(1, 4), min_size=1, max_size=6), min_size=1, max_size=3))
    def invite(self, households):
        for family, expected in enumerate(households):
            group_id = uuid.uuid4() if len(expected) > 1 else None
            rows = [
                {"first_name": f"M{family}{n}", "last_name": f"Family{family}", "expected_guests": e}
                for n, e in enumerate(expected)
            ]
            created = guest_services.guest_bulk_create(event=self.event, rows=rows, acting_user=self.owner)
            self.order += [g.pk for g in created]
            if group_id:
                guest_services.guest_group_connect(
                    event=self.event, guest_ids=[g.pk for g in created], acting_user=self.owner
                )
        self.login_groups = {pk: row["group"] for pk, row in self.rows().items()}
        self.before = self.rows()

    # --- answers -----------------------------------------------------------------------------------------

    def _own_declines(self, pks) -> set:
        return {pk for pk in pks if self.before[pk]["status"] == "declined" and self.before[pk]["by"] in OWN}

    @rule(
        who=st.integers(0, 1000),
        attending=st.booleans(),
        number=st.integers(0, 12),
        absent=st.sets(st.integers(0, 5), max_size=5),
        confirmed=CONFIRMED,
    )
    def answer_one_number(self, who, attending, number, absent, confirmed):
        guest = self.guest(who)
        step = self.begin("answer_one_number", guest)
        others = self.in_order(step.household - {guest.pk})
        absent_ids = tuple(others[i % len(others)] for i in absent) if others else ()
        step.may_switch = {guest.pk}  # a member may always change their own answer
        answer = HouseholdAnswer(attending=attending, num_guests=number, absent=absent_ids, confirmed=confirmed)
        step.saved = self.attempt(lambda: services.rsvp_submit(guest=guest, answer=answer))
        if step.saved and attending:
            step.expected_total = number
        elif step.saved:
            step.expected_rows = {guest.pk: ("declined", 0)}

    def _choices(self, guest, picks, household):
        members = self.in_order(household)
        choices = {}
        for index, attending, count in picks:
            pk = members[index % len(members)]
            choices[pk] = MemberChoice(guest_id=pk, attending=attending, num_guests=count if attending else None)
        return list(choices.values())

    @rule(
        who=st.integers(0, 1000),
        picks=st.lists(
            st.tuples(st.integers(0, 5), st.booleans(), st.one_of(st.none(), st.integers(0, 5))), min_size=1, max_size=6
        ),
        confirmed=CONFIRMED,
    )
    def answer_per_member(self, who, picks, confirmed):
        guest = self.guest(who)
        step = self.begin("answer_per_member", guest)
        choices = self._choices(guest, picks, step.household)
        # The explicit, confirmed choice of the person answering may switch a listed member's own decline.
        step.may_switch = {guest.pk} | ({c.guest_id for c in choices if c.attending} if confirmed else set())
        answer = HouseholdAnswer(members=tuple(choices), confirmed=confirmed)
        step.saved = self.attempt(lambda: services.rsvp_submit(guest=guest, answer=answer))
        if step.saved:
            step.expected_rows = self._expected_rows(choices)

    def _expected_rows(self, choices) -> dict:
        rows = {}
        for choice in choices:
            before = self.before[choice.guest_id]
            if choice.attending:
                usual = before["num"] if before["status"] == "coming" else self._expected_guests(choice.guest_id)
                rows[choice.guest_id] = ("coming", choice.num_guests if choice.num_guests is not None else usual)
            else:
                rows[choice.guest_id] = ("declined", 0)
        return rows

    def _expected_guests(self, pk) -> int:
        return Guest.objects.values_list("expected_guests", flat=True).get(pk=pk)

    @rule(
        who=st.integers(0, 1000),
        per_member=st.booleans(),
        number=st.integers(0, 12),
        picks=st.lists(
            st.tuples(st.integers(0, 5), st.booleans(), st.one_of(st.none(), st.integers(1, 5))), min_size=1, max_size=6
        ),
        confirmed=CONFIRMED,
    )
    def organizer_records(self, who, per_member, number, picks, confirmed):
        guest = self.guest(who)
        step = self.begin("organizer_records", guest)
        if per_member:
            choices = self._choices(guest, picks, step.household)
            answer = HouseholdAnswer(members=tuple(choices), confirmed=confirmed)
            step.may_switch = {c.guest_id for c in choices if c.attending} if confirmed else set()
        else:
            answer = HouseholdAnswer(attending=number > 0, num_guests=number, confirmed=confirmed)
            step.may_switch = {guest.pk} if confirmed and number > 0 else set()
        step.saved = self.attempt(lambda: services.rsvp_record(guest=guest, answer=answer, acting_user=self.owner))
        if step.saved and per_member:
            step.expected_rows = self._expected_rows(choices)
        elif step.saved and number > 0:
            step.expected_total = number

    # --- the organizer's other changes ---------------------------------------------------------------------

    @rule(who=st.integers(0, 1000), expected=st.integers(1, 4), rename=st.booleans())
    def organizer_edits(self, who, expected, rename):
        guest = self.guest(who)
        self.begin("organizer_edits")
        fields = {"expected_guests": expected, "dietary": "vegan" if rename else ""}
        if rename:
            fields["first_name"] = f"Renamé{who % 7}"
        guest_services.guest_update(guest=guest, acting_user=self.owner, **fields)

    @rule(first=st.integers(0, 1000), second=st.integers(0, 1000))
    def regroup_join_or_merge(self, first, second):
        a, b = self.guest(first), self.guest(second)
        self.begin("regroup")
        if a.pk != b.pk:
            guest_services.guest_group_connect(event=self.event, guest_ids=[a.pk, b.pk], acting_user=self.owner)

    @rule(who=st.integers(0, 1000))
    def regroup_leave(self, who):
        self.begin("regroup")
        guest_services.guest_group_leave(guest=self.guest(who), acting_user=self.owner)

    @rule(who=st.integers(0, 1000))
    def regenerate_code(self, who):
        self.begin("regenerate_code")
        guest_services.guest_code_regenerate(guest=self.guest(who), acting_user=self.owner)

    @rule(passed=st.booleans())
    def move_deadline(self, passed):
        self.begin("move_deadline")
        deadline = timezone.now() + (dt.timedelta(days=-1) if passed else dt.timedelta(days=10))
        event_update(event=self.event, acting_user=self.owner, rsvp_deadline=deadline)

    # --- change requests after the deadline ------------------------------------------------------------------

    @rule(who=st.integers(0, 1000), attending=st.booleans(), number=st.integers(1, 8))
    def ask_for_a_change(self, who, attending, number):
        guest = self.guest(who)
        self.begin("ask_for_a_change", guest)
        answer = HouseholdAnswer(attending=attending, num_guests=number if attending else 0)
        self.attempt(lambda: services.change_request_create(guest=guest, answer=answer, message="please"))

    @rule(approve=st.booleans())
    def organizer_decides(self, approve):
        request = ChangeRequest.objects.filter(event_id=self.event.pk, status="pending").order_by("created_at").first()
        step = self.begin("organizer_decides")
        if request is None:
            return
        decide = services.change_request_approve if approve else services.change_request_decline
        if approve:
            # Approving is the organizer's explicit choice of the proposal, which is confirmed by design.
            proposal = HouseholdAnswer.from_data(request.proposed)
            if proposal.members is not None:
                step.may_switch = {c.guest_id for c in proposal.members if c.attending}
            elif proposal.attending:
                step.may_switch = {request.guest_id}  # the guest asked for their own answer
        self.attempt(lambda: decide(request=request, acting_user=self.owner))

    # --- the invariants ------------------------------------------------------------------------------------

    def coming_means_at_least_one_person(self):
        for pk, row in self.rows().items():
            assert (row["status"] == "coming") == (row["num"] >= 1), f"{pk}: {row}"
            assert row["status"] == "coming" or row["num"] == 0, f"{pk}: {row}"

    def household_head_count_is_the_sum_of_its_members(self):
        rows = self.rows()
        seen = set()
        for pk in self.in_order(rows):
            group = rows[pk]["group"]
            if group is not None and group in seen:
                continue  # one member's view of a household is enough: they read the same rows
            seen.add(group)
            household = services.household_for(guest=Guest.objects.select_related("event", "tenant").get(pk=pk))
            members = [p for p, r in rows.items() if group is not None and r["group"] == group] or [pk]
            assert household.head_count == sum(rows[m]["num"] for m in members)
            assert {m.pk for m in household.everyone} == set(members)

    def event_stats_equal_a_recount(self):
        guests = list(Guest.objects.for_event(self.event))
        recount = {
            "invited": len(guests),
            "coming": sum(g.status == "coming" for g in guests),
            "declined": sum(g.status == "declined" for g in guests),
            "pending": sum(g.status == "pending" for g in guests),
            "never_logged_in": sum(g.last_login_at is None for g in guests),
            "invitations_sent": sum(g.invited_at is not None for g in guests),
            "head_count": sum(g.num_guests for g in guests if g.status == "coming"),
            "expected_head_count": sum(g.expected_guests for g in guests),
            "dietary_needs": sum(g.status == "coming" and g.dietary != "" for g in guests),
        }
        assert event_stats(event=self.event) == recount

    def own_declines_change_only_by_an_explicit_confirmed_choice(self):
        if not self.before:
            return
        now = self.rows()
        for pk in self._own_declines(set(self.before) & set(now)):
            if now[pk]["status"] != "declined":
                assert pk in self.step.may_switch, (
                    f"own decline of {pk} overwritten by {self.step.kind} without an explicit confirmed choice"
                )

    def closed_answers_change_only_through_the_organizer(self):
        if not self.before:
            return
        now = self.rows()
        changed = {
            pk
            for pk in set(self.before) & set(now)
            if (self.before[pk]["status"], self.before[pk]["num"]) != (now[pk]["status"], now[pk]["num"])
        }
        if self.step.kind in GUEST_STEPS and self.step.closed:
            assert not changed, f"{self.step.kind} changed {changed} while answers were closed"
        if self.step.kind in ANSWER_STEPS:
            assert changed <= self.step.household, f"{self.step.kind} changed {changed - self.step.household}"
        if self.step.kind not in ANSWER_STEPS | {"organizer_decides"}:
            assert not changed, f"{self.step.kind} changed answers of {changed}"

    def a_saved_answer_says_what_was_sent(self):
        now = self.rows()
        for pk, expected in self.step.expected_rows.items():
            assert (now[pk]["status"], now[pk]["num"]) == expected, f"{self.step.kind}: {pk} {now[pk]} != {expected}"
        if self.step.expected_total is not None:
            total = sum(now[pk]["num"] for pk in self.step.household)
            assert total == self.step.expected_total, (
                f"{self.step.kind}: said {self.step.expected_total}, stored {total}"
            )

    def the_guest_apis_kept_household_is_the_databases(self):
        """Every guest's kept household against the rows, read in one query (misses cost their own query)."""

        def seen(household):
            return invitation_data(household), household.guest.code, household.guest.event.status

        event = Event.objects.get(pk=self.event.pk)
        stored = {guest.pk: guest for guest in Guest.objects.for_event(event)}
        for guest in stored.values():
            guest.event = event
        for pk, guest in stored.items():
            group = sorted(
                (g for g in stored.values() if guest.group_id and g.group_id == guest.group_id and g.pk != pk),
                key=lambda g: (g.first_name, g.pk),
            )
            expected = services.Household(guest=guest, members=group)
            for hint in {self.login_groups.get(pk), guest.group_id}:
                kept = household_cache.household_with_hint(
                    tenant_id=self.tenant.pk, event_id=event.pk, guest_id=pk, group_hint=hint
                )
                assert seen(kept) == seen(expected), f"after {self.step.kind}: a stale household kept for {pk}"

    @invariant()
    def every_invariant_holds(self):
        """All seven, in this order, after every step; then this state is the next step's "before"."""
        self.coming_means_at_least_one_person()
        self.household_head_count_is_the_sum_of_its_members()
        self.event_stats_equal_a_recount()
        self.own_declines_change_only_by_an_explicit_confirmed_choice()
        self.closed_answers_change_only_through_the_organizer()
        self.a_saved_answer_says_what_was_sent()
        self.the_guest_apis_kept_household_is_the_databases()
        self.before = self.rows()
        self.step = Step(kind="between steps")


def run_machine(profile_settings, machine=HouseholdMachine) -> None:
    run_state_machine_as_test(machine, settings=profile_settings)


class HouseholdInvariantsTest(TestCase):
    def test_household_answers_always_add_up(self):
        Stats.examples = Stats.steps = Stats.saved_answers = Stats.refused = 0

        run_machine(MACHINE)

        print(
            f"\nHypothesis profile {PROFILE!r}: {Stats.examples} examples, {Stats.steps} steps, "
            f"{Stats.saved_answers} saved, {Stats.refused} refused by the rules"
        )
        assert Stats.examples >= MACHINE.max_examples
        assert Stats.saved_answers > Stats.examples  # the machine answers, not only gets refused


# --- controls: the checker must catch a broken rule --------------------------------------------------------

CONTROL = control_settings(examples=300, steps=25)


# The controls run a fixed seed (hypothesis.seed on a subclass, which stateful tests honour): a derandomized run
# takes its seed from the machine's source, so any edit of the machine moved how soon a control met its failure
# (4 examples, or 42: minutes on the MongoDB pass). With seed 7 each control fails within 12 examples.
ControlMachine = seed(7)(type("HouseholdControlMachine", (HouseholdMachine,), {}))

# The other rules' controls skip the kept-household check: it is not what they look for, and it triples their time.
skip_the_kept_household_check = mock.patch.object(
    HouseholdMachine, "the_guest_apis_kept_household_is_the_databases", lambda self: None
)


# The controls check the checker, not the database: its rules and invariants are the same code on every backend.
# On the MongoDB pass one example costs tens of seconds (every query goes to a Python server), and a control that
# needs a dozen examples took over twenty minutes there; the SQL passes run them.
@pytest.mark.skipif(ON_MONGODB, reason="the controls check the checker; the SQL passes run them")
class BrokenRuleControlsTest(TestCase):
    def test_a_rule_that_forgets_own_declines_is_caught(self):
        """Declines are never protected: a household answer then silently brings a decliner back."""
        with mock.patch.object(Guest, "is_own_decline", property(lambda guest: False)), skip_the_kept_household_check:
            with self.assertRaises(AssertionError) as caught:
                run_machine(CONTROL, ControlMachine)

        assert "own decline" in str(caught.exception), caught.exception

    def test_a_rule_that_lets_the_answerer_carry_the_whole_number_is_caught(self):
        """The old rule's spirit (the answerer counts everyone) with the others keeping their own counts."""
        real_plan = services._plan_one_number

        def answerer_carries_everything(household, answer, **kwargs):
            proposals = real_plan(household, answer, **kwargs)
            if answer.attending:
                proposals[0].num_guests = answer.num_guests
            return proposals

        with (
            mock.patch.object(services, "_plan_one_number", answerer_carries_everything),
            skip_the_kept_household_check,
        ):
            with self.assertRaises(AssertionError) as caught:
                run_machine(CONTROL, ControlMachine)

        assert "said" in str(caught.exception) and "stored" in str(caught.exception), caught.exception

    def test_a_write_that_changes_no_version_is_caught(self):
        """The models' writes stop changing the events' versions: the guest API would serve stale households."""
        with mock.patch.object(guest_view_versions, "_replace_versions", lambda event_ids: None):
            with self.assertRaises(AssertionError) as caught:
                run_machine(CONTROL, ControlMachine)

        assert "stale household" in str(caught.exception), caught.exception
