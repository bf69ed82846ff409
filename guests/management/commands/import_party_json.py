"""manage.py import_party_json EVENT_ID FILE --mapping map.json [--dry-run]: the party app's guests into an event."""

import os
import tempfile
import uuid
from pathlib import Path

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError
from django.urls import reverse

from events.models import Event
from guests.party_import import (
    INVITATION_LABELS,
    OUTCOME_LABELS,
    PartyImportError,
    party_documents_parse,
    party_import_run,
    party_mapping_json,
    party_mapping_parse,
)
from tenants.models import Membership, Role


def _read(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except OSError as error:
        raise CommandError(f"Cannot read {path}: {error.strerror}") from None


def _write_atomically(path: Path, text: str) -> None:
    """Replace the mapping file whole: a crash leaves the old one or the new one, never half of either."""
    descriptor, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        with os.fdopen(descriptor, "w", encoding="utf-8") as handle:
            handle.write(text)
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


class Command(BaseCommand):
    help = (
        "Import a JSON export of the party app's guest documents (mongoexport --jsonArray) into an invite-only "
        "event: tokens stay the guests' codes; groups, answers, head counts, dietary needs and login times are "
        "kept; isAdmin documents with an email become teammate invitations. The mapping file (old _id to new "
        "guest id) is read if it exists and written after the run; a re-run updates instead of duplicating."
    )

    def add_arguments(self, parser):
        parser.add_argument("event_id", help="The id of the invite-only event to import into.")
        parser.add_argument("file", type=Path, help="The JSON export of the guest documents.")
        parser.add_argument(
            "--mapping",
            type=Path,
            required=True,
            metavar="MAP.JSON",
            help="The id mapping: read first if it exists (a re-run), written after the run.",
        )
        parser.add_argument("--dry-run", action="store_true", help="Report what would happen; write nothing.")
        parser.add_argument(
            "--invited-by",
            metavar="EMAIL",
            help="The owner in whose name teammates are invited (default: the organization's first owner).",
        )

    def handle(self, *args, event_id, file, mapping, dry_run, invited_by, **options):
        try:
            event = Event.objects.select_related("tenant").get(pk=uuid.UUID(event_id))
        except (ValueError, Event.DoesNotExist):
            raise CommandError(f"No event with the id {event_id}.") from None
        owners = Membership.objects.for_tenant(event.tenant).filter(role=Role.OWNER).select_related("user")
        if invited_by:
            owners = owners.filter(user__email__iexact=invited_by)
        inviter = owners.order_by("created_at").first()
        if invited_by and inviter is None:
            raise CommandError(f"{invited_by} is not an owner of {event.tenant.name}.")
        try:
            documents = party_documents_parse(_read(file))
            previous = party_mapping_parse(_read(mapping), event=event) if mapping.exists() else {}
            report = party_import_run(
                event=event,
                documents=documents,
                previous_mapping=previous,
                acting_user=None,
                acting_membership=inviter,
                accept_url_builder=lambda invitation: (
                    settings.SITE_URL + reverse("tenants:invitation_accept", args=[invitation.token])
                ),
                dry_run=dry_run,
            )
        except PartyImportError as error:
            raise CommandError(" ".join(error.messages)) from None

        if dry_run:
            self.stdout.write("Dry run: nothing was written.")
        for row in report.rows:
            line = f"#{row.position} {row.old_id or '-'} {row.name or '-'}: {OUTCOME_LABELS[row.outcome]}"
            if row.reason:
                line += f": {row.reason}"
            if row.changed:
                line += f" ({', '.join(row.changed)})"
            if row.invitation:
                line += f"; {INVITATION_LABELS[row.invitation]}"
                if row.invitation_reason:
                    line += f": {row.invitation_reason}"
            for note in row.notes:
                line += f" [{note}]"
            self.stdout.write(line)
        if report.ignored_fields:
            self.stdout.write(f"Fields not imported: {', '.join(report.ignored_fields)}")
        self.stdout.write(report.summary())
        if not dry_run:
            _write_atomically(mapping, party_mapping_json(event=event, mapping=report.mapping))
            self.stdout.write(f"Mapping of {len(report.mapping)} guests written to {mapping}.")
