"""The guest's side: logging in with a code and answering for a household.

The rules (kept identical for the page and, later, the API):
- declining marks only this guest declined;
- a number equal to the household's expected total marks the whole household
  coming in one bulk update;
- fewer than expected must name who is not coming (or confirm) first;
- more than expected must be confirmed first;
- nothing changes after the RSVP deadline.
"""

from dataclasses import dataclass, field

from django.core.exceptions import ValidationError
from django.db.models import Case, Value, When
from django.utils import timezone
from django.utils.translation import gettext as _

from events.services import event_answers_clean
from guests.codes import normalize_code, normalize_name
from guests.models import Guest
from guests.notifications import guest_confirmation_enqueue
from guests.selectors import group_members
from tenants.services import audit_log_record


class RsvpClosed(Exception):
    """The deadline has passed (or the event is not open); changes go through the organizer."""


class RsvpNeedsConfirmation(Exception):
    FEWER = "fewer_than_expected"
    MORE = "more_than_expected"

    def __init__(self, *, reason: str, expected: int, answered: int, members: list[Guest]):
        super().__init__(reason)
        self.reason = reason
        self.expected = expected
        self.answered = answered
        self.members = members


def guest_authenticate(*, code: str, last_name: str) -> Guest | None:
    """The guest with this code and last name, or None; both mistakes look the same to the caller.

    Writes nothing: the login page and API record the login as activity
    (guests.activity.track_activity), which moves last_login_at off the request path.
    """
    code = normalize_code(code)
    if not code:
        return None
    guest = Guest.objects.select_related("event", "tenant").filter(code=code).first()
    if guest is None or normalize_name(guest.last_name) != normalize_name(last_name):
        return None
    if guest.event.is_archived:
        return None
    return guest


@dataclass
class Household:
    guest: Guest
    members: list[Guest] = field(default_factory=list)

    @property
    def expected_total(self) -> int:
        return self.guest.expected_guests + sum(m.expected_guests for m in self.members)


def household_for(*, guest: Guest) -> Household:
    return Household(guest=guest, members=group_members(guest=guest))


def rsvp_submit(
    *,
    guest: Guest,
    attending: bool,
    num_guests: int = 0,
    absent_member_ids=(),
    confirmed: bool = False,
    dietary: str = "",
    answers: dict | None = None,
    now=None,
) -> Household:
    """Save the guest's answer for their household, following the rules above.

    Raises RsvpClosed after the deadline and RsvpNeedsConfirmation when the
    number does not match the household's expected total and the guest has not
    confirmed yet. Nothing is written in either case.
    """
    now = now or timezone.now()
    event = guest.event
    if not event.is_rsvp_open(now):
        raise RsvpClosed()
    household = household_for(guest=guest)
    answers = event_answers_clean(event=event, answers=answers or {})
    member_ids = {m.pk for m in household.members}
    absent_ids = {pk for pk in absent_member_ids}
    if not absent_ids <= member_ids:
        raise ValidationError({"absent": _("Choose only members of your group.")})

    own_fields = {"dietary": dietary.strip(), "answers": answers, "rsvp_at": now}
    group = Guest.objects.in_group(guest)

    if not attending:
        _update_one(guest, status=Guest.Status.DECLINED, num_guests=0, **own_fields)
        _audit(guest, "rsvp.declined", {})
        guest_confirmation_enqueue(guest=guest)
        return household

    if num_guests < 1:
        raise ValidationError({"num_guests": _("Tell us how many of you are coming (at least 1).")})
    expected = household.expected_total

    if num_guests < expected and not confirmed:
        raise RsvpNeedsConfirmation(
            reason=RsvpNeedsConfirmation.FEWER, expected=expected, answered=num_guests, members=household.members
        )
    if num_guests > expected and not confirmed:
        raise RsvpNeedsConfirmation(
            reason=RsvpNeedsConfirmation.MORE, expected=expected, answered=num_guests, members=household.members
        )

    # One bulk update marks the household coming; the answering guest carries the number.
    coming = group if not absent_ids else group.exclude(pk__in=absent_ids)
    coming.update(
        status=Guest.Status.COMING,
        num_guests=Case(When(pk=guest.pk, then=Value(num_guests)), default=Value(0)),
        rsvp_at=now,
    )
    if absent_ids:
        group.filter(pk__in=absent_ids).update(status=Guest.Status.DECLINED, num_guests=0, rsvp_at=now)
    guest.status, guest.num_guests = Guest.Status.COMING, num_guests
    _update_one(guest, **own_fields)
    _audit(
        guest,
        "rsvp.coming",
        {"num_guests": num_guests, "expected": expected, "absent": sorted(str(pk) for pk in absent_ids)},
    )
    guest_confirmation_enqueue(guest=guest)
    return household_for(guest=guest)


def _update_one(guest: Guest, **values) -> None:
    for name, value in values.items():
        setattr(guest, name, value)
    guest.save(update_fields=list(values))


def _audit(guest: Guest, action: str, data: dict) -> None:
    audit_log_record(
        action=action,
        tenant=guest.tenant,
        event_id=guest.event_id,
        actor_guest_id=guest.pk,
        object_id=guest.pk,
        data=data,
    )
