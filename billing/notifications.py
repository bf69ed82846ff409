"""Emails about orders: to the buyer (tickets, refunds, an order that expired or whose payment failed) and to the
organizers (an order that needs them); the waitlist's offer and offer-expired emails. Each is sent once per order,
refund or offer: a claim (compare-and-set) on the row."""

import logging
from collections.abc import Mapping
from datetime import timedelta
from email.mime.image import MIMEImage
from functools import partial
from typing import Any

from django.conf import settings
from django.core.mail import EmailMultiAlternatives
from django.db.models import Q, Sum
from django.template.loader import render_to_string
from django.urls import reverse
from django.utils import timezone, translation
from django.utils.functional import Promise
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy

from billing.models import LedgerEntry, Order, Ticket, WaitlistEntry
from billing.qr import qr_png
from billing.selectors import order_holder
from events.calendar import event_calendar, event_calendar_filename
from eventsaas.dates import format_event_datetime
from eventsaas.mail import EmailWithInlineImages, calendar_attachment, email_subject, send_once, sender_in_name_of
from eventsaas.money import money_format
from guests.notifications import rsvp_link
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
    holder = order_holder(order=order)
    with translation.override(language), timezone.override(event.tzinfo):
        context = {
            "event": event,
            "order": order,
            "tickets": tickets,
            "total": money_format(order.total, order.currency, locale=language),
            "order_url": order_url,
            # The buyer is a guest of the event: their code and the page where they log in.
            "holder": holder,
            "guest_login_url": rsvp_link(holder) if holder is not None else "",
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


# --- the buyer's other emails: one helper, the same sender and language as the tickets email --------


def buyer_language(order: Order) -> str:
    """The language the buyer used to order (Order.language), else the event's."""
    return order.language or order.event.language


def buyer_email_send(
    *,
    order: Order,
    subject: str | Promise,
    template: str,
    context: Mapping[str, Any] | None = None,
    calendar_link_label: str | Promise | None = None,
) -> None:
    """Send the buyer of `order` an email in their language and the event's time zone.

    `subject` is a translatable template that may name `%(event)s`; `template` names the pair
    `emails/<template>.txt` and `.html`, rendered with `event`, `order`, `order_url`, `shop_url`
    and `context`. With `calendar_link_label` the event's .ics is attached, linking to the order
    page under that label. From the organization's name at the site's address, replies to the
    event's contact, like the tickets email. Raises what the mail backend raises; callers claim
    first (eventsaas.mail.send_once), so a retry sends it once.
    """
    from billing.services import order_page_path

    event = order.event
    order_url = settings.SITE_URL + order_page_path(order)
    shop_url = settings.SITE_URL + reverse("billing:shop", kwargs={"event_id": event.pk})
    _event_email_send(
        event=event,
        to=order.buyer_email,
        language=buyer_language(order),
        subject=subject,
        template=template,
        context={"order": order, "order_url": order_url, "shop_url": shop_url, **(context or {})},
        calendar_link=(order_url, calendar_link_label) if calendar_link_label is not None else None,
    )


def _event_email_send(
    *,
    event,
    to: str,
    language: str,
    subject: str | Promise,
    template: str,
    context: Mapping[str, Any],
    calendar_link: tuple[str, str | Promise] | None = None,
) -> None:
    """One email about `event` to `to`, rendered in `language` and the event's time zone (text and HTML,
    `emails/<template>`), from the organization's name, replies to the event's contact; with `calendar_link`
    (url, label) the event's .ics is attached."""
    with translation.override(language), timezone.override(event.tzinfo):
        full_context = {"event": event, **context}
        rendered_subject = email_subject(subject, event=event.name)
        text = render_to_string(f"emails/{template}.txt", full_context)
        html = render_to_string(f"emails/{template}.html", full_context)
        calendar = (
            event_calendar(event=event, link=calendar_link[0], link_label=str(calendar_link[1]))
            if calendar_link is not None
            else None
        )
    email = EmailMultiAlternatives(
        subject=rendered_subject,
        body=text,
        from_email=sender_in_name_of(event.tenant.name),
        to=[to],
        reply_to=[event.contact_email] if event.contact_email else None,
    )
    email.attach_alternative(html, "text/html")
    if calendar is not None:
        email.attach(calendar_attachment(calendar, filename=event_calendar_filename(event)))
    email.send()


def order_refund_emails_send(*, order: Order) -> int:
    """Tell the buyer of each refund booked for `order` that is not told yet; returns how many emails were sent.

    One email per refund ledger entry, whoever made it (the organizer here, or someone in Stripe's
    dashboard): a claim on the entry (eventsaas.mail.send_once), so redelivered webhooks and two
    workers send it once. A failed send clears that entry's claim and raises, for the task's retry.
    """
    sent = 0
    refunds = LedgerEntry.objects.filter(order_id=order.pk, kind=LedgerEntry.Kind.REFUND)
    for entry in refunds.filter(buyer_notified_at__isnull=True).order_by("created_at", "pk"):
        if send_once(
            refunds,
            pk=entry.pk,
            claim_field="buyer_notice_claimed_at",
            sent_field="buyer_notified_at",
            send=partial(_refund_email_send, order, entry),
        ):
            sent += 1
    return sent


def _refund_email_send(order: Order, entry: LedgerEntry) -> None:
    language = buyer_language(order)
    # The totals as they stood after this refund, so each email of several refunds tells its own step.
    refunded = LedgerEntry.objects.filter(
        order_id=order.pk, kind=LedgerEntry.Kind.REFUND, created_at__lte=entry.created_at
    ).aggregate(total=Sum("amount", default=0))["total"]
    tickets = list(Ticket.objects.filter(order_id=order.pk).select_related("ticket_type").order_by("seat"))
    voided = [ticket for ticket in tickets if not ticket.is_valid]
    valid = [ticket for ticket in tickets if ticket.is_valid]
    buyer_email_send(
        order=order,
        subject=gettext_lazy("Your refund for %(event)s"),
        template="order_refunded",
        context={
            "amount": money_format(entry.amount, entry.currency, locale=language),
            "refunded": money_format(refunded, order.currency, locale=language),
            "still_paid": money_format(max(order.paid_amount - refunded, 0), order.currency, locale=language),
            "is_full": refunded >= order.paid_amount,
            "voided_tickets": voided,
            "valid_tickets": valid,
        },
        # Tickets left to use: the event still belongs in the buyer's calendar.
        calendar_link_label=gettext_lazy("Your tickets") if valid else None,
    )


#: Closings the buyer is emailed about, by the reason order_close records. Not "buyer_cancelled" (the
#: buyer cancelled on the order page and read there that nothing was charged) nor "checkout_failed"
#: (the shop showed the error while they waited): an email would only repeat the page.
CLOSING_REASONS_EMAILED = frozenset({"sweep", "checkout_expired", "payment_failed"})


def order_closed_notify(*, order: Order, reason: str) -> bool:
    """Tell the buyer, once, that their order expired or its payment failed: nothing charged, seats released.

    False when the reason is not one to email about, the order is no longer expired or cancelled
    (a late payment made it paid, or refund due: the tickets or the refund email say what matters),
    money arrived for it after all, or the email was sent.
    """
    if reason not in CLOSING_REASONS_EMAILED or order.status not in {Order.Status.EXPIRED, Order.Status.CANCELLED}:
        return False
    return send_once(
        Order.objects.filter(status=order.status, paid_amount=0),
        pk=order.pk,
        claim_field="closed_notice_claimed_at",
        sent_field="closed_notified_at",
        send=partial(_closed_email_send, order, reason),
    )


def _closed_email_send(order: Order, reason: str) -> None:
    payment_failed = reason == "payment_failed"
    buyer_email_send(
        order=order,
        subject=(
            gettext_lazy("Your payment for %(event)s failed")
            if payment_failed
            else gettext_lazy("Your order for %(event)s expired")
        ),
        template="order_closed",
        context={
            "payment_failed": payment_failed,
            "total": money_format(order.total, order.currency, locale=buyer_language(order)),
        },
    )


# --- Waitlist ----------------------------------------------------------------------------------


def _waitlist_email(entry: WaitlistEntry, *, subject: str, template: str, context: dict) -> None:
    _event_email_send(
        event=entry.event,
        to=entry.email,
        language=entry.language or entry.event.language,
        subject=subject,
        template=template,
        context={"entry": entry, "ticket_type": entry.ticket_type, **context},
    )


def waitlist_offer_send(*, entry: WaitlistEntry) -> bool:
    """Email the offer once: the link to buy the held seat and when the hold ends, in the event's zone."""
    if entry.status != WaitlistEntry.Status.OFFERED:
        return False

    from billing.services import waitlist_offer_path

    def send():
        event = entry.event
        with translation.override(entry.language or event.language):
            subject = _("A ticket for %(event)s is yours if you want it")
            context = {
                "offer_url": settings.SITE_URL + waitlist_offer_path(entry),
                "hold_ends": format_event_datetime(entry.offer_expires_at, event.tzinfo),
            }
            _waitlist_email(entry, subject=subject, template="waitlist_offer", context=context)

    return send_once(
        WaitlistEntry.objects.filter(status=WaitlistEntry.Status.OFFERED, offer_token=entry.offer_token),
        pk=entry.pk,
        claim_field="offer_email_claimed_at",
        sent_field="offer_email_sent_at",
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

    return send_once(
        WaitlistEntry.objects.filter(status=WaitlistEntry.Status.EXPIRED),
        pk=entry.pk,
        claim_field="expired_email_claimed_at",
        sent_field="expired_email_sent_at",
        send=send,
    )
