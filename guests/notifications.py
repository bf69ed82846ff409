"""Emails to guests and organizers: invitations, RSVP confirmations, reminders, the daily digest.

Exactly once per (event, recipient, kind, window), without locks or
multi-document transactions (DESIGN.md):

1. claim: insert the GuestMessage row in status "sending". The unique
   constraint lets one sender win; the others stop. A row left "failed" by an
   earlier attempt is taken back by a compare-and-set failed -> sending, and so
   is a "sending" row older than a task's hard time limit (its attempt died
   before it could say how it went). A "sent" row is never sent again.
2. send: the email, rendered in the event's language, HTML and plain text.
3. record: a compare-and-set sending -> sent (or failed, with the error).

A send that fails with a transient error (SMTP down) is recorded as failed and
re-raised, so the task's retry claims the failed row and sends it.
"""

import logging
import uuid
from dataclasses import dataclass
from datetime import timedelta
from urllib.parse import urlencode

from django.conf import settings
from django.core.mail import EmailMultiAlternatives
from django.db import IntegrityError, transaction
from django.db.models import Q
from django.template.loader import render_to_string
from django.utils import timezone, translation
from django.utils.functional import Promise
from django.utils.translation import gettext_lazy as _

from events.calendar import event_calendar, event_calendar_filename
from events.models import Event
from eventsaas.fields import now_as_stored
from eventsaas.mail import calendar_attachment, email_subject, sender_in_name_of
from eventsaas.services import audit_log_record
from eventsaas.tasks import enqueue_on_commit
from guests.models import Guest, GuestMessage
from tenants.models import ActingUser, User
from tenants.selectors import event_organizer_emails, member_email
from tenants.services import tenant_require_verified

logger = logging.getLogger(__name__)

#: A window for "everyone not yet invited": clicking twice sends once.
FIRST_INVITATION_WINDOW = "first"


def _stale_claim_age() -> timedelta:
    return timedelta(seconds=settings.CELERY_TASK_TIME_LIMIT + 30)


def message_claim(*, event: Event, guest: Guest | None, recipient: str, kind: str, window: str) -> GuestMessage | None:
    """The claimed row when this caller may send now, or None when the message is sent or being sent."""
    now = timezone.now()
    try:
        with transaction.atomic():
            return GuestMessage.objects.create(
                tenant_id=event.tenant_id,
                event=event,
                guest=guest,
                recipient=recipient,
                kind=kind,
                window=window,
                claimed_at=now,
            )
    except IntegrityError:
        pass
    existing = GuestMessage.objects.filter(event=event, recipient=recipient, kind=kind, window=window).first()
    if existing is None or existing.status == GuestMessage.Status.SENT:
        return None
    retakeable = Q(status=GuestMessage.Status.FAILED) | Q(
        status=GuestMessage.Status.SENDING, claimed_at__lt=now - _stale_claim_age()
    )
    taken = (
        GuestMessage.objects.filter(retakeable, pk=existing.pk, claimed_at=existing.claimed_at)
        .filter(status=existing.status)
        .update(status=GuestMessage.Status.SENDING, claimed_at=now, error="")
    )
    if taken != 1:
        return None
    existing.status, existing.claimed_at, existing.error = GuestMessage.Status.SENDING, now, ""
    return existing


def _send_claimed(
    *,
    message: GuestMessage,
    event: Event,
    template: str,
    subject: str | Promise,
    context: dict,
    reply_to: str = "",
    calendar_link: str = "",
) -> bool:
    """Render and send the claimed message, then record the result; re-raises the sending error.

    Sent in the organization's name (its name, the site's address), answered to `reply_to`, else to
    the event's contact address. With `calendar_link`, the event's .ics is attached, its link that.
    """
    with translation.override(event.language), timezone.override(event.tzinfo):
        context = {"event": event, "organization": event.tenant, "site_url": settings.SITE_URL, **context}
        subject_text = email_subject(subject, event=event.name)
        text = render_to_string(f"emails/{template}.txt", context)
        html = render_to_string(f"emails/{template}.html", context)
        calendar = (
            event_calendar(event=event, link=calendar_link, link_label=str(_("Your invitation")))
            if calendar_link
            else None
        )
    answer_to = event.contact_email or reply_to
    email = EmailMultiAlternatives(
        subject=subject_text,
        body=text,
        from_email=sender_in_name_of(event.tenant.name),
        to=[message.recipient],
        reply_to=[answer_to] if answer_to else None,
    )
    email.attach_alternative(html, "text/html")
    if calendar is not None:
        email.attach(calendar_attachment(calendar, filename=event_calendar_filename(event)))
    try:
        email.send()
    except Exception as exc:
        GuestMessage.objects.filter(pk=message.pk, status=GuestMessage.Status.SENDING).update(
            status=GuestMessage.Status.FAILED, error=f"{type(exc).__name__}: {exc}"[:2000]
        )
        raise
    GuestMessage.objects.filter(pk=message.pk, status=GuestMessage.Status.SENDING).update(
        status=GuestMessage.Status.SENT, sent_at=timezone.now()
    )
    return True


def rsvp_login_url() -> str:
    """The guest login page, where a code is typed."""
    return f"{settings.SITE_URL}/rsvp/"


def rsvp_link(guest: Guest) -> str:
    """The guest login page with the guest's code filled in (only their last name is asked)."""
    return f"{rsvp_login_url()}?{urlencode({'code': guest.code})}"


# --- invitations ---------------------------------------------------------------------------------


@dataclass
class InvitationsQueued:
    queued: int
    without_email: int


def guest_invitations_send(
    *, event: Event, guests, acting_user: ActingUser, first_only: bool = False
) -> InvitationsQueued:
    """Queue invitations to these guests of the event (after commit); guests without email are skipped.

    Raises OrganizationNotVerified until an owner of the organization has verified their email.

    Each call is a new send (a resend), except `first_only`: "everyone not yet
    invited" shares one window, so clicking it twice sends once.
    """
    from guests.tasks import guest_invitation_send_task  # guests.tasks imports this module

    tenant_require_verified(tenant=event.tenant, action="email")
    window = FIRST_INVITATION_WINDOW if first_only else f"send:{uuid.uuid4()}"
    # Guests' replies reach the organizer who sent the invitations (unless the event names a contact).
    sender_id = str(acting_user.pk) if isinstance(acting_user, User) else None
    with_email = [g for g in guests if g.email]
    for guest in with_email:
        enqueue_on_commit(guest_invitation_send_task, guest_id=str(guest.pk), window=window, sender_id=sender_id)
    if with_email:
        audit_log_record(
            action="invitation.queued",
            tenant=event.tenant,
            event_id=event.pk,
            actor_user=acting_user,
            object_id=event.pk,
            data={"guests": [str(g.pk) for g in with_email], "window": window},
        )
    return InvitationsQueued(queued=len(with_email), without_email=len(guests) - len(with_email))


def guests_not_yet_invited(*, event: Event):
    return Guest.objects.for_event(event).filter(invited_at__isnull=True).exclude(email="")


def guest_invitation_send(*, guest: Guest, window: str, sender_id: str | None = None) -> bool:
    """Send the guest's invitation once for this window; True when this call sent it.

    What a guest needs to act on it: when (in the event's zone, labelled), where, the dress code,
    the deadline, their code and the link that fills it in, and the event as a calendar file.
    `sender_id` is the organizer who sent it: replies go to them when the event names no contact.
    """
    event = guest.event
    if not guest.email:
        return False
    message = message_claim(
        event=event, guest=guest, recipient=guest.email, kind=GuestMessage.Kind.INVITATION, window=window
    )
    if message is None:
        return False
    link = rsvp_link(guest)
    _send_claimed(
        message=message,
        event=event,
        template="invitation",
        subject=_("You are invited: %(event)s"),
        context={"guest": guest, "link": link, "login_url": rsvp_login_url()},
        reply_to=member_email(tenant=event.tenant, user_id=sender_id) if sender_id else "",
        calendar_link=link,
    )
    now = now_as_stored()
    Guest.objects.filter(pk=guest.pk).update(invited_at=now)
    guest.invited_at = now
    return True


# --- RSVP confirmation ---------------------------------------------------------------------------


def guest_confirmation_enqueue(*, guest: Guest) -> None:
    """After an answer is saved: confirm it to the guest by email (after commit), when they have one."""
    if not guest.email or guest.rsvp_at is None or not guest.tenant.is_verified:
        return
    from guests.tasks import guest_confirmation_send_task  # guests.tasks imports this module

    enqueue_on_commit(guest_confirmation_send_task, guest_id=str(guest.pk), window=guest.rsvp_at.isoformat())


def guest_confirmation_send(*, guest: Guest, window: str) -> bool:
    """Confirm the guest's answer (as stored now) once per answer (the window is the answer's time)."""
    event = guest.event
    if not guest.email:
        return False
    message = message_claim(
        event=event, guest=guest, recipient=guest.email, kind=GuestMessage.Kind.CONFIRMATION, window=window
    )
    if message is None:
        return False
    household = list(Guest.objects.in_group(guest).exclude(pk=guest.pk).order_by("first_name"))
    _send_claimed(
        message=message,
        event=event,
        template="confirmation",
        subject=_("Your answer for %(event)s"),
        context={
            "guest": guest,
            "members": household,
            "head_count": guest.num_guests + sum(m.num_guests for m in household),
            "link": rsvp_link(guest),
        },
    )
    return True


# --- change requests after the deadline ----------------------------------------------------------


def change_request_decided_enqueue(*, guest_id, request_id, approved: bool, response: str) -> None:
    """After an organizer decided a guest's change request: tell the guest by email (after commit).

    Plain values, not the request: the request belongs to rsvp, which builds on guests.
    """
    from guests.tasks import change_request_decided_send_task  # guests.tasks imports this module

    enqueue_on_commit(
        change_request_decided_send_task,
        guest_id=str(guest_id),
        request_id=str(request_id),
        approved=approved,
        response=response,
    )


def change_request_decided_send(*, guest: Guest, request_id: str, approved: bool, response: str) -> bool:
    """Tell the guest the organizer approved (the answer now stored) or declined their request; once per request."""
    event = guest.event
    # An organization nobody verified sends no email to guests (tenants.services.tenant_require_verified).
    if not guest.email or not guest.tenant.is_verified:
        return False
    kind = GuestMessage.Kind.CHANGE_APPROVED if approved else GuestMessage.Kind.CHANGE_DECLINED
    message = message_claim(event=event, guest=guest, recipient=guest.email, kind=kind, window=request_id)
    if message is None:
        return False
    household = Guest.objects.in_group(guest).exclude(pk=guest.pk).order_by("first_name")
    _send_claimed(
        message=message,
        event=event,
        template="change_request_decided",
        subject=_("Your answer for %(event)s: the organizer approved your change")
        if approved
        else _("Your answer for %(event)s: the organizer did not change it"),
        context={
            "guest": guest,
            "members": list(household),
            "approved": approved,
            "response": response,
            "link": rsvp_link(guest),
        },
    )
    return True


# --- reminders -----------------------------------------------------------------------------------


def reminder_window(event: Event) -> str:
    if event.rsvp_deadline is None:
        raise ValueError("Reminders are for events with an RSVP deadline")
    day = event.rsvp_deadline - timedelta(days=settings.REMINDER_DAYS_BEFORE_DEADLINE)
    return f"{event.pk}:{day.date().isoformat()}"


def events_due_for_reminders(*, now=None):
    now = now or timezone.now()
    # An organization nobody verified sends no email to guests (tenants.services.tenant_require_verified).
    return Event.objects.filter(
        status=Event.Status.PUBLISHED,
        tenant__verified_at__isnull=False,
        rsvp_deadline__gt=now,
        rsvp_deadline__lte=now + timedelta(days=settings.REMINDER_DAYS_BEFORE_DEADLINE),
    )


def event_reminders_send(*, event: Event) -> int:
    """Remind every still-pending guest with an email once per deadline; the number sent now.

    One guest's failure is recorded on its row and does not stop the others;
    the next hourly run takes the failed rows back.
    """
    window = reminder_window(event)
    sent = 0
    for guest in Guest.objects.for_event(event).filter(status=Guest.Status.PENDING).exclude(email=""):
        message = message_claim(
            event=event, guest=guest, recipient=guest.email, kind=GuestMessage.Kind.REMINDER, window=window
        )
        if message is None:
            continue
        try:
            _send_claimed(
                message=message,
                event=event,
                template="reminder",
                subject=_("Please answer: %(event)s"),
                context={"guest": guest, "link": rsvp_link(guest)},
            )
        except Exception:
            logger.exception("Reminder to guest %s failed; the next run retries it", guest.pk)
            continue
        sent += 1
    return sent


def reminders_send(*, now=None) -> int:
    """The hourly job: reminders for every event whose deadline is near."""
    return sum(event_reminders_send(event=event) for event in events_due_for_reminders(now=now))


# --- daily digest --------------------------------------------------------------------------------


def digest_recipients(*, event: Event) -> list[str]:
    return event_organizer_emails(tenant=event.tenant, contact_email=event.contact_email)


def digest_since(*, event: Event):
    last = (
        GuestMessage.objects.for_tenant(event.tenant)
        .filter(event=event, kind=GuestMessage.Kind.DIGEST, status=GuestMessage.Status.SENT)
        .order_by("-created_at")
        .values_list("created_at", flat=True)
        .first()
    )
    return last or event.created_at


def digest_contents(*, event: Event, since) -> dict | None:
    """What the digest says, or None when there is nothing new since `since`."""
    guests = Guest.objects.for_event(event)
    new_answers = list(guests.filter(rsvp_at__gt=since).order_by("rsvp_at"))
    if not new_answers:
        return None
    return {
        "new_answers": new_answers,
        "dietary_changes": [g for g in new_answers if g.dietary],
        "pending": guests.filter(status=Guest.Status.PENDING).count(),
        "never_logged_in": guests.filter(last_login_at__isnull=True).count(),
        "since": since,
    }


def event_digest_send(*, event: Event, now=None) -> int:
    """Send today's digest of the event to its organizers, when something is new; the number sent now."""
    now = now or timezone.now()
    window = timezone.localdate(now, event.tzinfo).isoformat()
    contents = digest_contents(event=event, since=digest_since(event=event))
    if contents is None:
        return 0
    sent = 0
    for recipient in digest_recipients(event=event):
        message = message_claim(
            event=event, guest=None, recipient=recipient, kind=GuestMessage.Kind.DIGEST, window=window
        )
        if message is None:
            continue
        try:
            _send_claimed(
                message=message,
                event=event,
                template="digest",
                subject=_("Today at %(event)s: new answers"),
                context={**contents, "event_url": f"{settings.SITE_URL}/o/{event.tenant.slug}/events/{event.pk}/"},
            )
        except Exception:
            logger.exception("Digest of event %s to %s failed; the next run retries it", event.pk, recipient)
            continue
        sent += 1
    return sent


def digests_send(*, now=None) -> int:
    """The daily job: a digest for every published event."""
    events = Event.objects.filter(status=Event.Status.PUBLISHED).select_related("tenant")
    return sum(event_digest_send(event=event, now=now) for event in events)
