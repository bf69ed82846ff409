"""Guests who asked for a change before Guest.change_requested_at existed get it set (their latest request's time)."""

from django.db import migrations
from django.db.models import Max


def backfill(apps, schema_editor):
    ChangeRequest = apps.get_model("rsvp", "ChangeRequest")
    Guest = apps.get_model("guests", "Guest")
    latest = ChangeRequest.objects.order_by().values("guest_id").annotate(at=Max("created_at"))
    for row in latest.iterator():
        Guest.objects.filter(pk=row["guest_id"]).update(change_requested_at=row["at"])


class Migration(migrations.Migration):
    dependencies = [
        ("rsvp", "0001_change_requests"),
        ("guests", "0009_guest_change_requested_at"),
    ]

    operations = [migrations.RunPython(backfill, migrations.RunPython.noop, elidable=True)]
