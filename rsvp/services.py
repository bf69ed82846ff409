"""The guest's side: logging in with a code, and the rules of a household's answer.

Every member of a household owns an answer: a status and a head count
(`num_guests`: the member plus the people they bring who have no code, 0
unless coming), and who gave it. The household's head count is the sum of its
members'. Somebody answers (a member, or an organizer recording an answer) in
one of two shapes:

- **one number for the household** (`attending`, `num_guests`, `absent`):
  declining marks only the person answering. Coming marks the household coming
  except the members named absent (declined) and the members whose own decline
  is on record (they keep it: only the per-member shape can change it). Each
  member coming counts their usual number (their answer if coming, else the
  invitation's `expected_guests`); the person answering counts the rest of the
  number. More than expected must be confirmed. Fewer than expected must be
  confirmed, and is possible only when the shortfall is the answerer's own
  people: when nobody is named absent and nobody's count can be lowered,
  it is refused even when confirmed, and nothing is saved.
- **a choice per member** (`members`: id, attending, num_guests): each listed
  member gets exactly that. Switching a member whose own decline is on record
  to coming, a total below or above what was expected of the listed members,
  must be confirmed; the answerer declining themselves never needs it.

Nothing is written until every rule passes; then one conditional update writes
every member (guests.services.guest_answers_apply). Guests answer while the
event is published and before its deadline; organizers may record answers at
any time, the same way, audit-logged with their account.
"""

import dataclasses
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from django.core.exceptions import ValidationError
from django.db import IntegrityError, transaction
from django.db.models import Q
from django.utils import timezone
from django.utils.translation import gettext as _

from events.models import Event
from events.services import event_answers_clean
from eventsaas.services import audit_log_record
from guests.codes import name_key, stored_code
from guests.models import Guest
from guests.notifications import change_request_decided_enqueue, guest_confirmation_enqueue
from guests.services import AnswerWrite, GuestAnswerConflict, guest_answers_apply
from rsvp.models import ChangeRequest
from tenants.models import ActingUser, User

DIETARY_MAX_LENGTH = 1000
MAX_PEOPLE_PER_MEMBER = 50


class RsvpClosed(Exception):
    """The deadline has passed (or answers were closed); changes go through the organizer."""


class RsvpNotOpen(Exception):
    """The event is not published yet: answers are not open."""


class RsvpConflict(Exception):
    """Someone changed the household's answers (or the household) while this answer was being decided."""


class RsvpNeedsConfirmation(Exception):
    """The answer needs an explicit confirmation (or, when not `confirmable`, names) before anything is saved."""

    FEWER = "fewer_than_expected"
    MORE = "more_than_expected"
    DECLINE_OVERRIDE = "overrides_decline"

    def __init__(
        self,
        *,
        reasons: list[str],
        expected: int,
        answered: int,
        members: list[Guest],
        concerned: Sequence[Guest] = (),
        declined_members: Sequence[Guest] = (),
        confirmable: bool = True,
    ):
        super().__init__(reasons[0])
        self.reasons = reasons
        self.expected = expected
        self.answered = answered
        #: the other members of the household, who may be named
        self.members = members
        #: the members whose number the question is about (fewer or more people than expected)
        self.concerned = list(concerned)
        #: members whose own decline this answer would change
        self.declined_members = list(declined_members)
        #: False: confirming alone is not enough, someone must be named absent (or a count lowered)
        self.confirmable = confirmable

    @property
    def reason(self) -> str:
        return self.reasons[0]


def guest_authenticate(*, code: str, last_name: str) -> Guest | None:
    """The guest with this code and last name, or None; both mistakes look the same to the caller.

    The last name is compared without case, accents, spaces or punctuation
    (guests.codes.name_key, the rule of the organizer's search too), so
    "obrien" is O'Brien. Writes nothing: the login page and API record the login
    as activity (guests.activity.track_activity), which moves last_login_at off
    the request path. A code longer than the column (imported from the party
    app) is looked up by its digest (guests.codes.stored_code).
    """
    code = stored_code(code)
    typed = name_key(last_name)
    if not code or not typed:
        return None
    guest = Guest.objects.select_related("event", "tenant").filter(code=code).first()
    if guest is None or name_key(guest.last_name) != typed:
        return None
    if guest.event.is_archived:
        return None
    return guest


# --- the household ----------------------------------------------------------------------------------


@dataclass
class Household:
    """The guest (as stored now) and the other members of its group."""

    guest: Guest
    members: list[Guest] = field(default_factory=list)

    @property
    def everyone(self) -> list[Guest]:
        return [self.guest, *self.members]

    @property
    def expected_total(self) -> int:
        return sum(m.expected_guests for m in self.everyone)

    @property
    def head_count(self) -> int:
        """The people coming: the sum of the members' own counts."""
        return sum(m.num_guests for m in self.everyone)

    def member(self, guest_id: uuid.UUID) -> Guest | None:
        return next((m for m in self.everyone if m.pk == guest_id), None)

    def member_known(self, guest_id: uuid.UUID) -> Guest:
        """A member the caller has already checked is in the household."""
        member = self.member(guest_id)
        if member is None:
            raise ValueError(f"{guest_id} is not a member of this household")
        return member


def household_for(*, guest: Guest) -> Household:
    """The guest's household read fresh in one query (the guest's own row too: it may have changed)."""
    rows = list(Guest.objects.in_group(guest).order_by("first_name", "pk"))
    own = next((row for row in rows if row.pk == guest.pk), None)
    if own is None:  # deleted meanwhile; the callers' lookups turn this into a 404 or a 401
        raise Guest.DoesNotExist()
    own.event, own.tenant = guest.event, guest.tenant
    return Household(guest=own, members=[row for row in rows if row.pk != guest.pk])


def household_with_hint(
    *, tenant_id: uuid.UUID, event_id: uuid.UUID, guest_id: uuid.UUID, group_hint: uuid.UUID | None
) -> Household | None:
    """The guest (with its event) and its household, in one query when the hint is current.

    `group_hint` is the group the guest had when its token was issued. Groups change
    (joining or leaving is one update of one guest), so the hint is only trusted after
    the guest's own row confirms it; a guest who moved since costs a second query.
    None when the guest does not exist in that organization and event.
    """
    # The event, not the organization: the invitation needs no tenant column (a third of the row's columns).
    scope = Guest.objects.select_related("event").filter(tenant_id=tenant_id, event_id=event_id)
    wanted = Q(pk=guest_id) | Q(group_id=group_hint) if group_hint else Q(pk=guest_id)
    rows = list(scope.filter(wanted).order_by("first_name", "pk"))
    own = next((row for row in rows if row.pk == guest_id), None)
    if own is None:
        return None
    if own.group_id is not None and own.group_id != group_hint:
        rows = list(scope.filter(group_id=own.group_id).order_by("first_name", "pk"))
        own = next((row for row in rows if row.pk == guest_id), own)
    members = [row for row in rows if row.pk != own.pk and own.group_id is not None and row.group_id == own.group_id]
    return Household(guest=own, members=members)


# --- what is answered -------------------------------------------------------------------------------


@dataclass(frozen=True)
class MemberChoice:
    """One member's answer in the per-member shape. None means "as before" (a count: the usual one)."""

    guest_id: uuid.UUID
    attending: bool
    num_guests: int | None = None
    dietary: str | None = None
    answers: dict[str, Any] | None = None


@dataclass(frozen=True)
class HouseholdAnswer:
    """What the person answering sends: one number (`attending`...) or a choice per member (`members`)."""

    attending: bool | None = None
    num_guests: int = 0
    absent: tuple[uuid.UUID, ...] = ()
    dietary: str | None = None
    answers: dict[str, Any] | None = None
    members: tuple[MemberChoice, ...] | None = None
    confirmed: bool = False

    @property
    def is_per_member(self) -> bool:
        return self.members is not None

    def as_data(self) -> dict[str, Any]:
        """JSON for storage (a change request's proposal); `from_data` reads it back."""
        data: dict[str, Any]
        if self.members is not None:
            data = {"members": [_member_data(choice) for choice in self.members]}
        else:
            data = {"attending": self.attending, "num_guests": self.num_guests, "absent": [str(a) for a in self.absent]}
            if self.dietary is not None:
                data["dietary"] = self.dietary
            if self.answers is not None:
                data["answers"] = self.answers
        return data

    @classmethod
    def from_data(cls, data: dict[str, Any], *, confirmed: bool = False) -> "HouseholdAnswer":
        if "members" in data:
            members = tuple(
                MemberChoice(
                    guest_id=uuid.UUID(str(m["id"])),
                    attending=bool(m["attending"]),
                    num_guests=m.get("num_guests"),
                    dietary=m.get("dietary"),
                    answers=m.get("answers"),
                )
                for m in data["members"]
            )
            return cls(members=members, confirmed=confirmed)
        return cls(
            attending=bool(data.get("attending")),
            num_guests=data.get("num_guests") or 0,
            absent=tuple(uuid.UUID(str(a)) for a in data.get("absent", ())),
            dietary=data.get("dietary"),
            answers=data.get("answers"),
            confirmed=confirmed,
        )

    def confirming(self) -> "HouseholdAnswer":
        return dataclasses.replace(self, confirmed=True)


def _member_data(choice: MemberChoice) -> dict[str, Any]:
    data: dict[str, Any] = {"id": str(choice.guest_id), "attending": choice.attending}
    for name in ("num_guests", "dietary", "answers"):
        if getattr(choice, name) is not None:
            data[name] = getattr(choice, name)
    return data


# --- the rules --------------------------------------------------------------------------------------


@dataclass
class Proposal:
    """The new answer of one member, and the details given with it."""

    member: Guest
    status: str
    num_guests: int
    dietary: str | None = None
    answers: dict[str, Any] | None = None

    @property
    def answer_changes(self) -> bool:
        return (self.status, self.num_guests) != (self.member.status, self.member.num_guests)


@dataclass
class AnswerPlan:
    household: Household
    proposals: list[Proposal]


def _clean_details(
    event: Event, *, dietary: str | None, answers: dict[str, Any] | None, field_name: str
) -> tuple[str | None, dict[str, Any] | None]:
    if dietary is not None:
        dietary = dietary.strip()
        if len(dietary) > DIETARY_MAX_LENGTH:
            raise ValidationError(
                {field_name: _("Dietary needs: at most %(max)s characters.") % {"max": DIETARY_MAX_LENGTH}}
            )
    if answers is not None:
        try:
            answers = event_answers_clean(event=event, answers=answers)
        except ValidationError as error:
            if field_name == "answers":
                raise
            raise ValidationError({field_name: error.message_dict["answers"]}) from None
    return dietary, answers


def _plan_one_number(
    household: Household, answer: HouseholdAnswer, *, event: Event, by_organizer: bool = False
) -> list[Proposal]:
    """The single-number shape: see the module docstring."""
    answerer = household.guest
    others = {m.pk: m for m in household.members}
    absent = set(answer.absent)
    if not absent <= set(others):
        raise ValidationError({"absent": _("Choose only members of your group.")})
    dietary, answers = _clean_details(event, dietary=answer.dietary, answers=answer.answers, field_name="answers")
    if not answer.attending:
        return [Proposal(answerer, Guest.Status.DECLINED, 0, dietary, answers)]
    if answer.num_guests < 1:
        raise ValidationError({"num_guests": _("Tell us how many of you are coming (at least 1).")})
    keeping_decline = [m for m in household.members if m.is_own_decline and m.pk not in absent]
    coming = [m for m in household.members if m.pk not in absent and m not in keeping_decline]
    expected = answerer.expected_guests + sum(m.usual_count for m in coming)
    answerer_count = answer.num_guests - sum(m.usual_count for m in coming)
    # An organizer is never the member: their "coming" for a guest whose own decline is on record is confirmed first.
    overrides = [answerer] if by_organizer and answerer.is_own_decline else []
    reasons = [RsvpNeedsConfirmation.DECLINE_OVERRIDE] if overrides else []
    if answer.num_guests > expected:
        reasons.append(RsvpNeedsConfirmation.MORE)
    elif answer.num_guests < expected:
        reasons.append(RsvpNeedsConfirmation.FEWER)
        if answerer_count < 1:
            # Nobody named and no count of the answerer's own left to lower: the number cannot
            # be told apart from "somebody is not coming", so it is never saved as it is.
            raise RsvpNeedsConfirmation(
                reasons=reasons,
                expected=expected,
                answered=answer.num_guests,
                members=household.members,
                concerned=coming,
                confirmable=False,
            )
    if reasons and not answer.confirmed:
        raise RsvpNeedsConfirmation(
            reasons=reasons,
            expected=expected,
            answered=answer.num_guests,
            members=household.members,
            concerned=[answerer] if reasons != [RsvpNeedsConfirmation.DECLINE_OVERRIDE] else [],
            declined_members=overrides,
        )
    proposals = [Proposal(answerer, Guest.Status.COMING, answerer_count, dietary, answers)]
    proposals += [Proposal(m, Guest.Status.COMING, m.usual_count) for m in coming]
    proposals += [Proposal(others[pk], Guest.Status.DECLINED, 0) for pk in sorted(absent, key=str)]
    return proposals


def _plan_per_member(
    household: Household, answer: HouseholdAnswer, *, event: Event, by_organizer: bool
) -> list[Proposal]:
    """The per-member shape: see the module docstring."""
    proposals = _member_proposals(household, answer, event=event)
    _per_member_confirmation_check(household, answer, proposals, by_organizer=by_organizer)
    return proposals


def _member_proposals(household: Household, answer: HouseholdAnswer, *, event: Event) -> list[Proposal]:
    """One proposal per member answered for, each a valid answer of its own (ValidationError otherwise)."""
    if not answer.members:
        raise ValidationError({"members": _("Answer for at least one member of your group.")})
    ids = [choice.guest_id for choice in answer.members]
    if len(set(ids)) != len(ids) or any(household.member(pk) is None for pk in ids):
        raise ValidationError({"members": _("Choose only members of your group, each once.")})
    return [_member_proposal(household.member_known(choice.guest_id), choice, event=event) for choice in answer.members]


def _member_proposal(member: Guest, choice: MemberChoice, *, event: Event) -> Proposal:
    dietary, answers = _clean_details(event, dietary=choice.dietary, answers=choice.answers, field_name="members")
    if choice.attending:
        count = choice.num_guests if choice.num_guests is not None else member.usual_count
        if not 1 <= count <= MAX_PEOPLE_PER_MEMBER:
            raise ValidationError(
                {
                    "members": _("%(name)s: say how many people are coming (1 to %(max)s).")
                    % {"name": member.full_name, "max": MAX_PEOPLE_PER_MEMBER}
                }
            )
        return Proposal(member, Guest.Status.COMING, count, dietary, answers)
    if choice.num_guests:
        raise ValidationError({"members": _("%(name)s is not coming: count 0 people.") % {"name": member.full_name}})
    return Proposal(member, Guest.Status.DECLINED, 0, dietary, answers)


def _per_member_confirmation_check(
    household: Household, answer: HouseholdAnswer, proposals: list[Proposal], *, by_organizer: bool
) -> None:
    """RsvpNeedsConfirmation, unless confirmed, when the answer overrides someone's own decline or its head
    count differs from what the household expects (members not answered for count as they stand)."""
    answerer = household.guest
    overrides = [
        p.member
        for p in proposals
        if p.status == Guest.Status.COMING and p.member.is_own_decline and (by_organizer or p.member != answerer)
    ]
    counted = [
        p
        for p in proposals
        if p.status == Guest.Status.COMING or (p.member.status != Guest.Status.DECLINED and p.member != answerer)
    ]
    expected = sum(p.member.usual_count for p in counted)
    answered = sum(p.num_guests for p in counted)
    reasons = [RsvpNeedsConfirmation.DECLINE_OVERRIDE] if overrides else []
    concerned = []
    if answered < expected:
        reasons.append(RsvpNeedsConfirmation.FEWER)
        concerned = [p.member for p in counted if p.num_guests < p.member.usual_count]
    elif answered > expected:
        reasons.append(RsvpNeedsConfirmation.MORE)
        concerned = [p.member for p in counted if p.num_guests > p.member.usual_count]
    if reasons and not answer.confirmed:
        raise RsvpNeedsConfirmation(
            reasons=reasons,
            expected=expected,
            answered=answered,
            members=household.members,
            concerned=concerned,
            declined_members=overrides,
        )


def _plan(*, household: Household, answer: HouseholdAnswer, event: Event, by_organizer: bool) -> AnswerPlan:
    if answer.is_per_member:
        proposals = _plan_per_member(household, answer, event=event, by_organizer=by_organizer)
    elif answer.attending is None:
        raise ValidationError({"attending": _("Say whether you are coming.")})
    else:
        proposals = _plan_one_number(household, answer, event=event, by_organizer=by_organizer)
    return AnswerPlan(household=household, proposals=proposals)


def _writes(plan: AnswerPlan, *, by_organizer: bool) -> list[AnswerWrite]:
    answerer = plan.household.guest
    writes = []
    for proposal in plan.proposals:
        member = proposal.member
        if member.is_ticket_holder:
            continue  # their answer follows their tickets (guests.services.guest_tickets_follow)
        # The person answering always answered (their time and name are stamped); others only when changed.
        answered = proposal.answer_changes or (member == answerer and not by_organizer)
        if by_organizer:
            kind = Guest.AnsweredBy.ORGANIZER
        else:
            kind = Guest.AnsweredBy.SELF if member == answerer else Guest.AnsweredBy.HOUSEHOLD
        dietary = proposal.dietary if proposal.dietary is not None and proposal.dietary != member.dietary else None
        answers = proposal.answers if proposal.answers is not None and proposal.answers != member.answers else None
        if answered or dietary is not None or answers is not None:
            writes.append(
                AnswerWrite(
                    guest=member,
                    status=proposal.status if answered else None,
                    num_guests=proposal.num_guests if answered else None,
                    answered_by=kind if answered else None,
                    dietary=dietary,
                    answers=answers,
                )
            )
    return writes


def ticket_holder_guard(guest: Guest) -> None:
    """A ticket holder's answer follows their tickets: they (or an organizer) change it by a refund, not a form."""
    if guest.is_ticket_holder:
        raise ValidationError(
            _("This answer follows the tickets: it changes when tickets are refunded or voided, not here.")
        )


def rsvp_guard(event: Event, now: datetime | None = None) -> None:
    """Raise RsvpNotOpen for an event not published yet, RsvpClosed when answers are closed."""
    if event.status == Event.Status.DRAFT:
        raise RsvpNotOpen()
    if not event.is_rsvp_open(now):
        raise RsvpClosed()


def rsvp_submit(*, guest: Guest, answer: HouseholdAnswer, now: datetime | None = None) -> Household:
    """Save the guest's answer for their household, following the rules above; the household as stored after.

    Raises RsvpNotOpen / RsvpClosed when guests cannot answer, RsvpNeedsConfirmation
    when the answer must be confirmed (or needs names) first, ValidationError for
    members outside the household or bad details, RsvpConflict when the household
    changed meanwhile. Nothing is written in any of these cases.
    """
    now = now or timezone.now()
    event = guest.event
    rsvp_guard(event, now)
    ticket_holder_guard(guest)
    household = household_for(guest=guest)
    plan = _plan(household=household, answer=answer, event=event, by_organizer=False)
    try:
        applied = guest_answers_apply(
            event=event, writes=_writes(plan, by_organizer=False), now=now, answering_guest_id=guest.pk
        )
    except GuestAnswerConflict:
        raise RsvpConflict() from None
    fresh = household_for(guest=guest)
    if any(w.guest.pk == guest.pk and w.changes_answer for w in applied.writes):
        guest_confirmation_enqueue(guest=fresh.guest)
    return fresh


def rsvp_record(
    *, guest: Guest, answer: HouseholdAnswer, acting_user: ActingUser, now: datetime | None = None, via: str = ""
) -> Household:
    """An organizer records an answer for the guest's household (a phone call, a late change).

    The same bodies and rules as the guest's, at any time (after the deadline
    too, and before the event is published), except that the organizer is never
    the member themselves: switching anyone's own decline needs confirming.
    Refused (ValidationError) for an archived event, whose records are kept as they are.
    """
    now = now or timezone.now()
    event = guest.event
    if event.is_archived:
        raise ValidationError(_("This event is archived: its answers can no longer change."))
    ticket_holder_guard(guest)
    household = household_for(guest=guest)
    plan = _plan(household=household, answer=answer, event=event, by_organizer=True)
    try:
        guest_answers_apply(
            event=event, writes=_writes(plan, by_organizer=True), now=now, acting_user=acting_user, via=via
        )
    except GuestAnswerConflict:
        raise RsvpConflict() from None
    return household_for(guest=guest)


def rsvp_preview(*, guest: Guest, answer: HouseholdAnswer) -> AnswerPlan:
    """What an organizer recording `answer` (confirmed) would change now; writes nothing."""
    household = household_for(guest=guest)
    return _plan(household=household, answer=answer.confirming(), event=guest.event, by_organizer=True)


# --- change requests after the deadline -------------------------------------------------------------


class ChangeRequestNotNeeded(Exception):
    """Answers are open (or not open yet): the guest answers directly, no request needed."""


def change_request_create(
    *, guest: Guest, answer: HouseholdAnswer, message: str, now: datetime | None = None
) -> ChangeRequest:
    """The guest asks the organizer to change their answer after the deadline.

    The proposed answer is checked against the household now (members, counts,
    details) so an organizer is never asked to approve something impossible, or
    something that is the answer already (ValidationError, code "unchanged"). One
    request per guest is open at a time: asking again while one is pending
    replaces its proposal and message.
    """
    now = now or timezone.now()
    event = guest.event
    try:
        rsvp_guard(event, now)
    except RsvpClosed:
        pass
    except RsvpNotOpen:
        raise ChangeRequestNotNeeded() from None
    else:
        raise ChangeRequestNotNeeded()
    ticket_holder_guard(guest)
    message = (message or "").strip()
    if len(message) > ChangeRequest.MESSAGE_MAX_LENGTH:
        raise ValidationError({"message": _("At most %(max)s characters.") % {"max": ChangeRequest.MESSAGE_MAX_LENGTH}})
    plan = rsvp_preview(guest=guest, answer=answer)
    proposed = answer.as_data()
    pending = ChangeRequest.objects.filter(
        tenant_id=guest.tenant_id, event_id=guest.event_id, guest_id=guest.pk, status=ChangeRequest.Status.PENDING
    )
    # Nothing to decide: the organizer would approve a request that changes nothing. With a request
    # open, the same answer replaces it ("keep my answer after all") so the organizer sees the change of mind.
    if not _writes(plan, by_organizer=True) and not pending.exists():
        raise ValidationError(
            _("This is your answer already: there is nothing for the organizer to change."), code="unchanged"
        )
    request = None
    for _attempt in range(3):
        if pending.update(proposed=proposed, message=message, created_at=now):
            # The flag is set already (by the pending request's save); it follows the request's new time.
            Guest.objects.filter(pk=guest.pk, tenant_id=guest.tenant_id, event_id=guest.event_id).update(
                change_requested_at=now
            )
            request = pending.first()
        if request is not None:
            break
        try:
            with transaction.atomic():
                request = ChangeRequest.objects.create(
                    tenant_id=guest.tenant_id,
                    event_id=guest.event_id,
                    guest=guest,
                    proposed=proposed,
                    message=message,
                    created_at=now,
                )
            break
        except IntegrityError:
            continue  # another request of this guest was opened at the same moment: update that one
    if request is None:
        raise RsvpConflict()
    guest.change_requested_at = request.created_at  # as stored (milliseconds)
    audit_log_record(
        action="rsvp.change_requested",
        tenant=guest.tenant,
        event_id=guest.event_id,
        actor_guest_id=guest.pk,
        object_id=guest.pk,
        data={"request": str(request.pk), "proposed": proposed},
    )
    return request


class ChangeRequestAlreadyDecided(Exception):
    """Someone decided this request first; it is decided once."""


def _decide(request: ChangeRequest, *, status: str, acting_user: User, response: str, now: datetime) -> bool:
    return bool(
        ChangeRequest.objects.filter(pk=request.pk, status=ChangeRequest.Status.PENDING).update(
            status=status, decided_by_user_id=acting_user.pk, decided_at=now, response=response
        )
    )


def change_request_approve(
    *, request: ChangeRequest, acting_user: User, response: str = "", now: datetime | None = None
) -> Household:
    """Apply the proposed answer through the organizer's path and tell the guest.

    The request is claimed first (pending -> approved, a compare-and-set: two
    organizers clicking at once apply it once). If the answer cannot be applied
    any more (the household changed), the claim is undone and the request stays
    pending, with the error for the organizer.
    """
    now = now or timezone.now()
    guest = request.guest
    answer = HouseholdAnswer.from_data(request.proposed, confirmed=True)
    rsvp_preview(guest=guest, answer=answer)
    response = (response or "").strip()[: ChangeRequest.MESSAGE_MAX_LENGTH]
    if not _decide(request, status=ChangeRequest.Status.APPROVED, acting_user=acting_user, response=response, now=now):
        raise ChangeRequestAlreadyDecided()
    try:
        household = rsvp_record(guest=guest, answer=answer, acting_user=acting_user, now=now, via="change_request")
    except (ValidationError, RsvpNeedsConfirmation, RsvpConflict):
        ChangeRequest.objects.filter(
            pk=request.pk, status=ChangeRequest.Status.APPROVED, decided_by_user_id=acting_user.pk
        ).update(status=ChangeRequest.Status.PENDING, decided_by_user_id=None, decided_at=None, response="")
        raise
    request.status, request.decided_by_user_id, request.decided_at, request.response = (
        ChangeRequest.Status.APPROVED,
        acting_user.pk,
        now,
        response,
    )
    audit_log_record(
        action="rsvp.change_approved",
        tenant=guest.tenant,
        event_id=guest.event_id,
        actor_user=acting_user,
        object_id=guest.pk,
        data={"request": str(request.pk)},
    )
    _tell_guest(request)
    return household


def change_request_decline(
    *, request: ChangeRequest, acting_user: User, response: str = "", now: datetime | None = None
) -> ChangeRequest:
    """Decline the request (decided once, by compare-and-set) and tell the guest; the answer stays."""
    now = now or timezone.now()
    response = (response or "").strip()[: ChangeRequest.MESSAGE_MAX_LENGTH]
    if not _decide(request, status=ChangeRequest.Status.DECLINED, acting_user=acting_user, response=response, now=now):
        raise ChangeRequestAlreadyDecided()
    request.status, request.decided_by_user_id, request.decided_at, request.response = (
        ChangeRequest.Status.DECLINED,
        acting_user.pk,
        now,
        response,
    )
    audit_log_record(
        action="rsvp.change_declined",
        tenant_id=request.tenant_id,
        event_id=request.event_id,
        actor_user=acting_user,
        object_id=request.guest_id,
        data={"request": str(request.pk)},
    )
    _tell_guest(request)
    return request


def _tell_guest(request: ChangeRequest) -> None:
    change_request_decided_enqueue(
        guest_id=request.guest_id,
        request_id=request.pk,
        approved=request.status == ChangeRequest.Status.APPROVED,
        response=request.response,
    )
