"""Buyers' emails: the confirmation with tickets and QR codes, the organizers' attention note, waitlist offers."""

import logging
from datetime import timedelta
from email.mime.image import MIMEImage

from django.conf import settings
from django.core.mail import EmailMultiAlternatives
from django.db.models import Q
from django.template.loader import render_to_string
from django.urls import reverse
from django.utils import timezone, translation
from django.utils.translation import gettext as _

from billing.models import Order, Ticket, WaitlistEntry
from billing.qr import qr_png
from events.calendar import event_calendar, event_calendar_filename
from eventsaas.dates import format_event_datetime
from eventsaas.mail import EmailWithInlineImages, calendar_attachment, email_subject, sender_in_name_of
from eventsaas.money import money_format
from tenants.selectors import event_organizer_emails

logger = logging.getLogger(__name__)

# A claim older than this belongs to a worker that died; the email may be sent again
# (a possible second copy rather than a lost one, as for guest emails).
STALE_CLAIM = timedelta(minutes=15)


def order_confirmation_send(*, order: Order) -> bool:
    """Send the tickets email once: claim (compare-and-set), send, mark sent. False if not due or taken."""
    if not order.is_paid or order.confirmation_sent_at is not None:
        return False
    now = timezone.now()
    claimable = Q(confirmation_claimed_at__isnull=True) | Q(confirmation_claimed_at__lt=now - STALE_CLAIM)
    if not Order.objects.filter(claimable, pk=order.pk, confirmation_sent_at__isnull=True).update(
        confirmation_claimed_at=now
    ):
        return False
    try:
        _send(order)
    except Exception:
        Order.objects.filter(pk=order.pk, confirmation_claimed_at=now).update(confirmation_claimed_at=None)
        raise
    Order.objects.filter(pk=order.pk).update(confirmation_sent_at=timezone.now())
    return True


def _send(order: Order) -> None:
    from billing.services import order_page_path

    event = order.event
    tickets = list(Ticket.objects.filter(order_id=order.pk, status=Ticket.Status.VALID).select_related("ticket_type"))
    language = order.language or event.language
    order_url = settings.SITE_URL + order_page_path(order)
    with translation.override(language), timezone.override(event.tzinfo):
        context = {
            "event": event,
            "order": order,
            "tickets": tickets,
            "total": money_format(order.total, order.currency, locale=language),
            "order_url": order_url,
        }
        subject = email_subject(_("Your tickets for %(event)s"), event=event.name)
        text = render_to_string("emails/tickets.txt", context)
        html = render_to_string("emails/tickets.html", context)
        calendar = event_calendar(event=event, link=order_url, link_label=_("Your tickets"))
    # In the organization's name (the site's address), as the guests' emails.
    email = EmailWithInlineImages(
        subject=subject,
        body=text,
        from_email=sender_in_name_of(event.tenant.name),
        to=[order.buyer_email],
        reply_to=[event.contact_email] if event.contact_email else None,
    )
    email.attach_alternative(html, "text/html")
    # Inline images referenced as cid:ticket-<code> from the HTML part.
    for ticket in tickets:
        image = MIMEImage(qr_png(ticket.code), "png")
        image.add_header("Content-ID", f"<ticket-{ticket.code}>")
        image.add_header("Content-Disposition", "inline", filename=f"ticket-{ticket.display_code}.png")
        email.attach(image)
    email.attach(calendar_attachment(calendar, filename=event_calendar_filename(event)))
    email.send()


def order_attention_notify(*, order: Order) -> bool:
    """Tell the organizers, once, that money arrived for an order that issued no tickets (refund due, review)."""
    if not order.needs_attention:
        return False
    now = timezone.now()
    if not Order.objects.filter(pk=order.pk, attention_notified_at__isnull=True).update(attention_notified_at=now):
        return False
    event = order.event
    recipients = event_organizer_emails(tenant=event.tenant, contact_email=event.contact_email)
    if not recipients:
        return False
    path = reverse(
        "billing_organizer:order",
        kwargs={"tenant_slug": event.tenant.slug, "event_id": event.pk, "order_id": order.pk},
    )
    try:
        with translation.override(event.language), timezone.override(event.tzinfo):
            context = {
                "event": event,
                "order": order,
                "paid": money_format(order.paid_amount, order.currency, locale=event.language),
                "order_url": settings.SITE_URL + path,
            }
            subject = email_subject(_("An order for %(event)s needs you"), event=event.name)
            text = render_to_string("emails/order_attention.txt", context)
            html = render_to_string("emails/order_attention.html", context)
        email = EmailMultiAlternatives(
            subject=subject, body=text, from_email=settings.DEFAULT_FROM_EMAIL, to=recipients
        )
        email.attach_alternative(html, "text/html")
        email.send()
    except Exception:
        Order.objects.filter(pk=order.pk, attention_notified_at=now).update(attention_notified_at=None)
        raise
    return True


# --- Waitlist ----------------------------------------------------------------------------------


def _waitlist_email_once(entry: WaitlistEntry, *, claimed: str, sent: str, due: Q, send) -> bool:
    """Claim (compare-and-set on `claimed`), send, mark `sent`: one email per entry state, even redelivered."""
    now = timezone.now()
    claimable = Q(**{f"{claimed}__isnull": True}) | Q(**{f"{claimed}__lt": now - STALE_CLAIM})
    if not WaitlistEntry.objects.filter(due, claimable, pk=entry.pk, **{f"{sent}__isnull": True}).update(
        **{claimed: now}
    ):
        return False
    try:
        send()
    except Exception:
        WaitlistEntry.objects.filter(pk=entry.pk, **{claimed: now}).update(**{claimed: None})
        raise
    WaitlistEntry.objects.filter(pk=entry.pk).update(**{sent: timezone.now()})
    return True


def _waitlist_email(entry: WaitlistEntry, *, subject: str, template: str, context: dict) -> None:
    event = entry.event
    with translation.override(entry.language or event.language), timezone.override(event.tzinfo):
        context = {"event": event, "entry": entry, "ticket_type": entry.ticket_type, **context}
        text = render_to_string(f"emails/{template}.txt", context)
        html = render_to_string(f"emails/{template}.html", context)
        subject = email_subject(subject, event=event.name)
    email = EmailMultiAlternatives(
        subject=subject,
        body=text,
        from_email=sender_in_name_of(event.tenant.name),
        to=[entry.email],
        reply_to=[event.contact_email] if event.contact_email else None,
    )
    email.attach_alternative(html, "text/html")
    email.send()


def waitlist_offer_send(*, entry: WaitlistEntry) -> bool:
    """Email the offer once: the link to buy the held seat and when the hold ends, in the event's zone."""
    if entry.status != WaitlistEntry.Status.OFFERED:
        return False

    from billing.services import waitlist_entry_path

    def send():
        event = entry.event
        with translation.override(entry.language or event.language):
            subject = _("A ticket for %(event)s is yours if you want it")
            context = {
                "offer_url": settings.SITE_URL + waitlist_entry_path(entry),
                "hold_ends": format_event_datetime(entry.offer_expires_at, event.tzinfo),
            }
            _waitlist_email(entry, subject=subject, template="waitlist_offer", context=context)

    return _waitlist_email_once(
        entry,
        claimed="offer_email_claimed_at",
        sent="offer_email_sent_at",
        due=Q(status=WaitlistEntry.Status.OFFERED, token=entry.token),
        send=send,
    )


def waitlist_offer_expired_send(*, entry: WaitlistEntry) -> bool:
    """Email once that the offer ran out and the seat went to the next person in line."""
    if entry.status != WaitlistEntry.Status.EXPIRED:
        return False

    def send():
        event = entry.event
        with translation.override(entry.language or event.language):
            subject = _("Your ticket offer for %(event)s has expired")
            shop_url = settings.SITE_URL + reverse("billing:shop", kwargs={"event_id": event.pk})
            _waitlist_email(entry, subject=subject, template="waitlist_offer_expired", context={"shop_url": shop_url})

    return _waitlist_email_once(
        entry,
        claimed="expired_email_claimed_at",
        sent="expired_email_sent_at",
        due=Q(status=WaitlistEntry.Status.EXPIRED),
        send=send,
    )
