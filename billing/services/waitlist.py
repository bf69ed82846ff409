"""The waitlist of sold-out ticket types: joining, offers that hold a freed seat, their expiry, claiming one.

A freed seat is offered exactly once without locks or multi-row transactions (DESIGN.md):

1. the seat is reserved with events' conditional update (`sold + reserved + 1 <= capacity`), the same
   compare-and-set checkout uses, so offers never exceed the seats that are free;
2. the next entry moves waiting -> offered with a compare-and-set on its row, so each entry gets one offer;
3. whoever loses step 2 (another worker offered that entry first) gives the seat back and tries the next entry.

The held seat then belongs to the entry until it is claimed (offered -> claimed hands it to the order,
whose own arrows release it if unpaid), expires (offered -> expired releases it) or is left.
"""

import logging
import uuid
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.core.exceptions import ValidationError
from django.utils import timezone
from django.utils.translation import gettext as _

from billing.models import WaitlistEntry, new_secret
from events import services as events_services
from events.models import Event, TicketType
from eventsaas.fields import now_as_stored
from eventsaas.services import audit_log_record
from eventsaas.tasks import enqueue_on_commit

logger = logging.getLogger(__name__)

#: Offers one call makes at most (a raised capacity frees many seats at once; the sweep continues).
MAX_OFFERS_PER_CALL = 200

ACTIVE = (WaitlistEntry.Status.WAITING, WaitlistEntry.Status.OFFERED)


def _tasks() -> Any:
    from billing import tasks

    return tasks


def waitlist_is_open(*, ticket_type: TicketType) -> bool:
    """Whether a buyer may join: the type is on sale and has no seat for the public (sold out, or seats
    are free but held back for people already waiting)."""
    if not ticket_type.is_active or not ticket_type.is_in_sales_window():
        return False
    return ticket_type.is_sold_out or waitlist_has_waiting(ticket_type_id=ticket_type.pk)


def waitlist_has_waiting(*, ticket_type_id: uuid.UUID) -> bool:
    return WaitlistEntry.objects.filter(ticket_type_id=ticket_type_id, status=WaitlistEntry.Status.WAITING).exists()


def waitlist_join(
    *,
    event: Event,
    ticket_type_id: uuid.UUID | str,
    email: str,
    name: str = "",
    language: str = "en",
    access_code: str = "",
) -> WaitlistEntry:
    """Put `email` in line for a sold-out type. ValidationError with field messages on bad input, when
    the type has seats for sale, or when this address is already in line for it."""
    ticket_type = (
        TicketType.objects.filter(tenant_id=event.tenant_id, event_id=event.pk, pk=ticket_type_id).first()
        if _is_uuid(ticket_type_id)
        else None
    )
    if ticket_type is None or (ticket_type.access_code and ticket_type.access_code != access_code.strip()):
        raise ValidationError({"ticket_type": _("This ticket type is not on sale for this event.")})
    if not event.is_on_sale or not ticket_type.is_active or not ticket_type.is_in_sales_window():
        raise ValidationError({"ticket_type": _("“%(name)s” is not on sale now.") % {"name": ticket_type.name}})
    if not waitlist_is_open(ticket_type=ticket_type):
        raise ValidationError(
            {"ticket_type": _("“%(name)s” is not sold out: buy a ticket instead.") % {"name": ticket_type.name}}
        )
    entry = WaitlistEntry(
        tenant_id=event.tenant_id,
        event_id=event.pk,
        ticket_type_id=ticket_type.pk,
        email=email.strip().lower(),
        name=name.strip(),
        language=language,
    )
    errors: dict[str, Any] = {}
    if not entry.email:
        errors["email"] = _("Enter your email address.")
    else:
        try:
            WaitlistEntry._meta.get_field("email").run_validators(entry.email)
        except ValidationError as exc:
            errors["email"] = exc.messages
    if len(entry.name) > 200:
        errors["name"] = _("Names can have at most 200 characters.")
    if errors:
        raise ValidationError(errors)

    # Before the entry exists: from now on checkout and the shop look for people waiting on this type.
    events_services.ticket_type_waitlist_start(ticket_type=ticket_type)
    existing = WaitlistEntry.objects.filter(ticket_type_id=ticket_type.pk, email=entry.email).first()
    if existing is None:
        try:
            entry.save(force_insert=True)
        except Exception:
            # The unique (type, email) index: a simultaneous join of the same address stored it first.
            existing = WaitlistEntry.objects.filter(ticket_type_id=ticket_type.pk, email=entry.email).first()
            if existing is None:
                raise
    if existing is not None:
        entry = _rejoin(existing, name=entry.name, language=language)
    audit_log_record(
        action="waitlist.joined", tenant_id=event.tenant_id, event_id=event.pk, object_id=entry.pk, data={}
    )
    # Seats may be free already (held back for the line): offer them now rather than at the next sweep.
    waitlist_seats_freed(ticket_type_ids=[ticket_type.pk])
    return entry


def _is_uuid(value: Any) -> bool:
    try:
        uuid.UUID(str(value))
    except ValueError:
        return False
    return True


def _rejoin(existing: WaitlistEntry, *, name: str, language: str) -> WaitlistEntry:
    """An address already known for this type: in line again at the back, unless it still is."""
    if existing.is_active:
        raise ValidationError({"email": _("This email address is already on the waitlist for this ticket type.")})
    now = timezone.now()
    if not WaitlistEntry.objects.filter(pk=existing.pk, status=existing.status).update(
        status=WaitlistEntry.Status.WAITING,
        created_at=now,
        name=name,
        language=language,
        token=new_secret(),
        offer_token="",
        offered_at=None,
        offer_expires_at=None,
        closed_at=None,
        order_id=None,
        offer_email_claimed_at=None,
        offer_email_sent_at=None,
        expired_email_claimed_at=None,
        expired_email_sent_at=None,
    ):
        raise ValidationError({"email": _("This email address is already on the waitlist for this ticket type.")})
    existing.refresh_from_db()
    return existing


def waitlist_leave(*, entry: WaitlistEntry) -> bool:
    """waiting|offered -> left; an offered entry's held seat goes to the next in line. False if already gone."""
    for status in ACTIVE:
        if WaitlistEntry.objects.filter(pk=entry.pk, status=status).update(
            status=WaitlistEntry.Status.LEFT, closed_at=now_as_stored()
        ):
            if status == WaitlistEntry.Status.OFFERED:
                events_services.seats_release(ticket_type_id=entry.ticket_type_id, quantity=1)
                waitlist_seats_freed(ticket_type_ids=[entry.ticket_type_id])
            entry.status = WaitlistEntry.Status.LEFT
            audit_log_record(
                action="waitlist.left", tenant_id=entry.tenant_id, event_id=entry.event_id, object_id=entry.pk
            )
            return True
    return False


def waitlist_seats_freed(*, ticket_type_ids: list[Any]) -> None:
    """Seats of these types went back on sale: offer them to people waiting, once the caller commits.

    Cheap when nobody waits (one indexed read per type). A trigger missed here (a crash before the
    commit hook ran) is caught by the sweep within a minute.
    """
    for ticket_type_id in dict.fromkeys(str(t) for t in ticket_type_ids):
        if waitlist_has_waiting(ticket_type_id=uuid.UUID(ticket_type_id)):
            enqueue_on_commit(_tasks().waitlist_offer_task, ticket_type_id=ticket_type_id)


def _seat_hold(*, ticket_type_id: uuid.UUID) -> bool:
    """Reserve one seat for an offer: the compare-and-set checkout uses (a module attribute, so the
    concurrency test's control run can swap it for a read-check-write)."""
    return events_services.seats_reserve(ticket_type_id=ticket_type_id, quantity=1)


def _entry_offer(*, entry: WaitlistEntry, at: datetime, expires: datetime) -> bool:
    """waiting -> offered, the compare-and-set that gives each entry one offer (a module attribute, as above).

    The offer gets its own new link (`offer_token`, emailed): only it buys the held seat, so the offer is
    taken by whoever reads the address's mailbox (joining checks no address), and a link from an earlier
    offer's email is dead. The entry's own `token` stays: the page the joiner was given keeps showing the
    entry (and the offer, without the buy form) and can still leave.
    """
    return bool(
        WaitlistEntry.objects.filter(pk=entry.pk, status=WaitlistEntry.Status.WAITING).update(
            status=WaitlistEntry.Status.OFFERED,
            offered_at=at,
            offer_expires_at=expires,
            offer_token=new_secret(),
            offer_email_claimed_at=None,
            offer_email_sent_at=None,
        )
    )


def waitlist_offer_next(*, ticket_type_id: uuid.UUID, now: datetime | None = None) -> int:
    """Offer free seats of a type to the people waiting for it, first come first served. Returns how many."""
    offered = 0
    for _attempt in range(MAX_OFFERS_PER_CALL):
        entry = (
            WaitlistEntry.objects.filter(ticket_type_id=ticket_type_id, status=WaitlistEntry.Status.WAITING)
            .order_by("created_at", "pk")
            .first()
        )
        if entry is None or not _seat_hold(ticket_type_id=ticket_type_id):
            break
        at = now or now_as_stored()
        expires = at + timedelta(minutes=settings.WAITLIST_OFFER_HOLD_MINUTES)
        if not _entry_offer(entry=entry, at=at, expires=expires):
            # Another worker offered this entry (or it left) between the read and the update: the seat is not
            # this entry's, so it goes back, and the loop looks at the next in line.
            events_services.seats_release(ticket_type_id=ticket_type_id, quantity=1)
            continue
        offered += 1
        audit_log_record(
            action="waitlist.offered",
            tenant_id=entry.tenant_id,
            event_id=entry.event_id,
            object_id=entry.pk,
            data={"expires_at": expires.isoformat()},
        )
        enqueue_on_commit(_tasks().waitlist_offer_send_task, entry_id=str(entry.pk))
    return offered


def waitlist_offers_expire_due(*, now: datetime | None = None) -> int:
    """offered -> expired for offers past their hold: the seat goes to the next in line. Returns how many."""
    now = now or timezone.now()
    expired = 0
    due = WaitlistEntry.objects.filter(status=WaitlistEntry.Status.OFFERED, offer_expires_at__lte=now).order_by(
        "offer_expires_at"
    )[:1000]
    freed: list[uuid.UUID] = []
    for entry in due:
        if not WaitlistEntry.objects.filter(
            pk=entry.pk, status=WaitlistEntry.Status.OFFERED, offer_expires_at__lte=now
        ).update(status=WaitlistEntry.Status.EXPIRED, closed_at=now_as_stored()):
            continue  # claimed or left meanwhile, or another sweep expired it
        events_services.seats_release(ticket_type_id=entry.ticket_type_id, quantity=1)
        expired += 1
        freed.append(entry.ticket_type_id)
        audit_log_record(
            action="waitlist.offer_expired", tenant_id=entry.tenant_id, event_id=entry.event_id, object_id=entry.pk
        )
        enqueue_on_commit(_tasks().waitlist_offer_expired_send_task, entry_id=str(entry.pk))
    for ticket_type_id in dict.fromkeys(freed):
        waitlist_offer_next(ticket_type_id=ticket_type_id)
    return expired


def waitlist_sweep(*, now: datetime | None = None) -> dict[str, int]:
    """The periodic safety net: expire due offers, then offer any free seat to people waiting
    (a trigger lost in a crash, a capacity raised while the worker was down)."""
    expired = waitlist_offers_expire_due(now=now)
    waiting_types = set(
        WaitlistEntry.objects.filter(status=WaitlistEntry.Status.WAITING).values_list("ticket_type_id", flat=True)[
            :10000
        ]
    )
    offered = sum(waitlist_offer_next(ticket_type_id=t) for t in waiting_types)
    return {"expired": expired, "offered": offered}


def waitlist_claim(*, entry: WaitlistEntry, token: str, order_id: uuid.UUID) -> bool:
    """offered -> claimed: the held seat now belongs to order `order_id`. False if the offer is not live or
    `token` is not this offer's emailed one (the entry's own link cannot buy)."""
    if not token:
        return False
    now = timezone.now()
    return bool(
        WaitlistEntry.objects.filter(
            pk=entry.pk, offer_token=token, status=WaitlistEntry.Status.OFFERED, offer_expires_at__gt=now
        ).update(status=WaitlistEntry.Status.CLAIMED, closed_at=now, order_id=order_id)
    )


def waitlist_claim_undo(*, entry: WaitlistEntry, order_id: uuid.UUID) -> None:
    """The order for a claimed offer could not be created (the provider failed) and gave its seat back:
    the entry is first in line again with its old place, and the seat is offered again."""
    if WaitlistEntry.objects.filter(pk=entry.pk, status=WaitlistEntry.Status.CLAIMED, order_id=order_id).update(
        status=WaitlistEntry.Status.WAITING, closed_at=None, order_id=None
    ):
        waitlist_seats_freed(ticket_type_ids=[entry.ticket_type_id])
