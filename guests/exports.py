"""The guest side's downloads: the guest list, the dietary report and the answers to the event's questions.

Each function turns what a selector reads into a `Sheet` (eventsaas/spreadsheets.py writes it as CSV or
Excel, formula injection neutralised). Headers are in the organizer's language; times are in the event's
time zone, named in the header.
"""

from collections.abc import Iterator, Sequence
from typing import Any

from django.utils.translation import gettext as _
from django.utils.translation import ngettext

from events.models import Event
from eventsaas.spreadsheets import Cell, Sheet, local_datetime, zoned_header
from guests import selectors


def guest_sheet(*, event: Event, filters: selectors.GuestFilters, include_codes: bool) -> Sheet:
    """One row per guest as the guest list shows them (same filters, same order), every member's own answer.

    Reads in two queries whatever the number of guests (the households' names, then the guests in
    chunks), and streams: the rows are made while the file is written. `include_codes` adds each guest's
    personal code, which logs in as that guest.
    """
    zone = event.timezone
    questions = [q for q in event.questions or [] if isinstance(q, dict) and q.get("key")]
    headers = [
        _("Last name"),
        _("First name"),
        _("Email"),
        _("Phone"),
        # The import reads this column back (as "external id"), so importing an export names the same guests.
        _("External id"),
        *([_("Code")] if include_codes else []),
        _("Household"),
        _("Status"),
        _("Expected guests"),
        _("Head count"),
        _("Answered by"),
        zoned_header(_("Answered at"), zone),
        _("Dietary needs"),
        *(str(q.get("label") or q["key"]) for q in questions),
        zoned_header(_("Invited at"), zone),
        zoned_header(_("Last login"), zone),
        zoned_header(_("Last access"), zone),
    ]
    households = selectors.household_names(event=event)

    def rows() -> Iterator[Sequence[Cell]]:
        tz = event.tzinfo
        for guest in selectors.guest_export_list(event=event, filters=filters):
            answers = guest.answers if isinstance(guest.answers, dict) else {}
            yield [
                guest.last_name,
                guest.first_name,
                guest.email,
                guest.phone,
                guest.external_id,
                *([guest.code] if include_codes else []),
                households.get(guest.group_id, ""),
                guest.get_status_display(),
                guest.expected_guests,
                guest.num_guests,
                guest.get_answered_by_kind_display() if guest.answered_by_kind else "",
                local_datetime(guest.rsvp_at, tz),
                guest.dietary,
                *(_answer_text(answers.get(q["key"])) for q in questions),
                local_datetime(guest.invited_at, tz),
                local_datetime(guest.last_login_at, tz),
                local_datetime(guest.last_access_at, tz),
            ]

    return Sheet(title=_("Guests"), headers=headers, rows=rows())


def _answer_text(value: object) -> str:
    return value if isinstance(value, str) else ""


def dietary_sheet(*, event: Event) -> Sheet:
    """The dietary report as the page shows it: one row per need, with the persons who wrote it."""
    rows: list[Sequence[Cell]] = [
        [
            entry["dietary"],
            entry["persons"],
            entry["with_others"],
            "; ".join(_person_with_others(guest) for guest in entry["guests"]),
        ]
        for entry in selectors.dietary_report(event=event)
    ]
    headers = [_("Dietary needs"), _("Persons"), _("Coming with them without a code"), _("Guests")]
    return Sheet(title=_("Dietary report"), headers=headers, rows=rows)


def _person_with_others(guest: dict[str, Any]) -> str:
    """ "Ann Lee with 2 more": a person of the dietary report and the people they bring without a code."""
    name = f"{guest['first_name']} {guest['last_name']}".strip()
    others = guest["num_guests"] - 1
    if others < 1:
        return name
    return ngettext("%(name)s with %(count)s more", "%(name)s with %(count)s more", others) % {
        "name": name,
        "count": others,
    }


def question_sheet(*, event: Event) -> Sheet:
    """The answers to the event's questions as the page shows them: per question, persons per answer.

    A last row per question counts the coming persons who did not answer it.
    """
    rows: list[Sequence[Cell]] = []
    for question in selectors.question_report(event=event):
        rows.extend([question["label"], entry["answer"], entry["count"]] for entry in question["answers"])
        rows.append([question["label"], _("No answer"), question["unanswered"]])
    return Sheet(title=_("Questions"), headers=[_("Question"), _("Answer"), _("Persons")], rows=rows)
