"""Check-in at the door: one conditional update per ticket."""

import logging
from dataclasses import dataclass
from datetime import datetime

from billing.models import Ticket
from events.models import Event
from eventsaas.fields import now_as_stored
from eventsaas.services import audit_log_record
from guests.codes import normalize_code
from tenants.models import ActingUser

logger = logging.getLogger(__name__)


@dataclass
class CheckInResult:
    result: str  # valid | already_checked_in | void | wrong_event | unknown
    ticket: Ticket | None = None
    checked_in_at: datetime | None = None


def ticket_check_in(*, event: Event, code: str, acting_user: ActingUser) -> CheckInResult:
    """Scan or typed code -> one answer. Two scans at the same moment: exactly one is "valid"."""
    code = normalize_code(code)
    ticket = Ticket.objects.filter(code=code, tenant_id=event.tenant_id).select_related("ticket_type").first()
    if ticket is None:
        # Another organization's ticket is as unknown as a made-up code.
        return CheckInResult("unknown")
    if ticket.event_id != event.pk:
        return CheckInResult("wrong_event", ticket)
    if not ticket.is_valid:
        return CheckInResult("void", ticket)
    now = now_as_stored()  # the first scan answers with the time every later scan reads back
    if Ticket.objects.filter(pk=ticket.pk, status=Ticket.Status.VALID, checked_in_at__isnull=True).update(
        checked_in_at=now, checked_in_by=acting_user
    ):
        ticket.checked_in_at = now
        audit_log_record(
            action="ticket.checked_in",
            tenant_id=event.tenant_id,
            event_id=event.pk,
            actor_user=acting_user,
            object_id=ticket.pk,
        )
        return CheckInResult("valid", ticket, now)
    ticket.refresh_from_db(fields=["status", "checked_in_at"])
    if not ticket.is_valid:
        return CheckInResult("void", ticket)
    return CheckInResult("already_checked_in", ticket, ticket.checked_in_at)
