"""manage.py repair_dates: move event and ticket-type dates stored outside 1900-2200 back into range."""

from django.core.management.base import BaseCommand

from events.services import dates_repair


class Command(BaseCommand):
    help = (
        "Repair event and ticket-type dates outside the years 1900-2200 (stored before the range rule): "
        "optional dates are cleared, an event's start moves a day inside the nearest end. Audited; safe to run again."
    )

    def add_arguments(self, parser):
        parser.add_argument("--dry-run", action="store_true", help="List what would change, change nothing.")

    def handle(self, *args, dry_run=False, **options):
        repairs = dates_repair(dry_run=dry_run)
        for repair in repairs:
            for field, (old, new) in repair.changes.items():
                where = f"{repair.model} {repair.pk} (event {repair.event_id})"
                self.stdout.write(f"{where}: {field} {old} -> {new or 'empty'}")
        verb = "would be repaired" if dry_run else "repaired"
        self.stdout.write(self.style.SUCCESS(f"{len(repairs)} row(s) {verb}."))
