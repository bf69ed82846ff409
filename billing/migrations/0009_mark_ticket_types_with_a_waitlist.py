from django.db import migrations
from django.db.models import Min


def mark_types_with_a_waitlist(apps, schema_editor):
    """Types that already have waitlist entries get events' mark (TicketType.waitlist_started_at, from their
    first entry), so checkout and the shop keep holding their free seats back for the people waiting."""
    TicketType = apps.get_model("events", "TicketType")
    WaitlistEntry = apps.get_model("billing", "WaitlistEntry")
    started = WaitlistEntry.objects.values("ticket_type_id").annotate(first=Min("created_at")).order_by()
    for row in started:
        TicketType.objects.filter(pk=row["ticket_type_id"], waitlist_started_at__isnull=True).update(
            waitlist_started_at=row["first"]
        )


class Migration(migrations.Migration):

    dependencies = [
        ('billing', '0008_waitlist_entry'),
        ('events', '0005_ticket_type_waitlist_started_at'),
    ]

    operations = [migrations.RunPython(mark_types_with_a_waitlist, migrations.RunPython.noop)]
