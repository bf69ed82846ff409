from django.core.management.base import BaseCommand

from eventsaas.maintenance import maintenance_is_on, maintenance_switch


class Command(BaseCommand):
    help = (
        "Switch maintenance on or off: while on, every web process and worker refuses writes "
        "(pages and API answer 503) and reads keep working (eventsaas/maintenance.py)."
    )

    def add_arguments(self, parser):
        parser.add_argument("state", choices=["on", "off", "status"])

    def handle(self, *args, state, **options):
        if state != "status":
            maintenance_switch(on=state == "on")
        if maintenance_is_on():
            self.stdout.write("Maintenance is on: writes are refused.")
        else:
            self.stdout.write("Maintenance is off.")
