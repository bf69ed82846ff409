"""Fill the new household-answer fields of existing guests.

1. `search_key` for every guest (the rule of guests.codes.search_key, copied here
   so this migration keeps meaning what it meant when it was written).
2. Answers written by the old rule: the member who answered for the household
   carried the whole number and every other coming member had num_guests=0.
   Each coming member now counts at least 1. Per household the old total is
   kept where it can be: every coming member gets 1, the rest of the total goes
   first to members who had 0 (up to their expected_guests), then back to the
   member who carried it. A household whose total was smaller than its coming
   members (the "fewer without naming anyone" defect) ends with one per coming
   member: they were marked coming, so each is at least one person.
   Members who are not coming get 0.
3. Who answered: the member who carried the number answered themselves; a
   member marked coming or declined at the same moment was answered for by
   them; any other decline is the member's own (the old rule declined a member
   only when they answered themselves or were named absent in that same answer).
"""

import unicodedata
from itertools import groupby

from django.db import migrations

_UNDECOMPOSABLE = str.maketrans({"ø": "o", "æ": "ae", "œ": "oe", "ł": "l", "đ": "d", "ð": "d", "þ": "th", "ı": "i"})
BATCH = 1000


def _name_key(raw):
    decomposed = unicodedata.normalize("NFKD", (raw or "").strip())
    without_marks = "".join(ch for ch in decomposed if not unicodedata.combining(ch))
    return "".join(ch for ch in without_marks.casefold().translate(_UNDECOMPOSABLE) if ch.isalnum())


def _search_key(guest):
    parts = [
        _name_key(guest.first_name),
        _name_key(guest.last_name),
        _name_key(f"{guest.first_name}{guest.last_name}"),
        _name_key(guest.code),
    ]
    return " ".join(part for part in parts if part)


def _reconcile(members):
    coming = [m for m in members if m.status == "coming"]
    carriers = [m for m in coming if m.num_guests > 0]
    zeros = [m for m in coming if m.num_guests == 0]
    for member in members:
        if member.status != "coming":
            member.num_guests = 0
    if zeros:
        total = sum(m.num_guests for m in carriers)
        counts = {m.pk: 1 for m in coming}
        extra = total - len(coming)
        for member in zeros:
            share = max(0, min(member.expected_guests - 1, extra))
            counts[member.pk] += share
            extra -= share
        for member in carriers:
            share = max(0, min(member.num_guests - 1, extra))
            counts[member.pk] += share
            extra -= share
        if extra > 0 and carriers:
            counts[carriers[0].pk] += extra
        for member in coming:
            member.num_guests = counts[member.pk]
    carrier_at = {m.rsvp_at: m for m in carriers if m.rsvp_at is not None}
    for member in members:
        if member.status == "pending" or member.rsvp_at is None:
            continue
        answerer = carrier_at.get(member.rsvp_at)
        if member in carriers or answerer is None or answerer.pk == member.pk:
            member.answered_by_kind, member.answered_by_guest_id = "self", member.pk
        else:
            member.answered_by_kind, member.answered_by_guest_id = "household", answerer.pk


def forwards(apps, schema_editor):
    Guest = apps.get_model("guests", "Guest")
    db = schema_editor.connection.alias
    fields = ["first_name", "last_name", "code", "group_id", "status", "num_guests", "expected_guests", "rsvp_at"]
    guests = Guest.objects.using(db).only("pk", "event_id", *fields).order_by("event_id", "group_id", "pk")
    changed = []

    def household_key(guest):
        return (guest.event_id, guest.group_id or guest.pk)

    for _key, household in groupby(guests.iterator(chunk_size=BATCH), key=household_key):
        members = list(household)
        _reconcile(members)
        for member in members:
            member.search_key = _search_key(member)
        changed.extend(members)
        if len(changed) >= BATCH:
            _save(Guest, db, changed)
            changed = []
    _save(Guest, db, changed)


def _save(Guest, db, guests):
    if guests:
        Guest.objects.using(db).bulk_update(
            guests, ["search_key", "num_guests", "answered_by_kind", "answered_by_guest_id"], batch_size=BATCH
        )


class Migration(migrations.Migration):
    dependencies = [
        ("guests", "0004_household_answers"),
    ]

    operations = [
        migrations.RunPython(forwards, migrations.RunPython.noop, elidable=True),
    ]
