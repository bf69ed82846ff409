"""Email helpers shared by every app that sends mail."""

import re
from collections.abc import Callable
from email.headerregistry import Address
from email.mime.base import MIMEBase
from email.mime.text import MIMEText
from email.utils import parseaddr
from typing import Any

from django.conf import settings
from django.core.mail import EmailMultiAlternatives
from django.core.mail.message import SafeMIMEMultipart
from django.db.models import QuerySet
from django.utils import timezone

# Line breaks end a mail header (Django refuses them with BadHeaderError); other
# control characters have no business in a subject either. Unicode line and
# paragraph separators count as breaks for many mail clients.
_UNSAFE_IN_HEADER = re.compile(r"[\x00-\x1f\x7f\u0085\u2028\u2029]+")


def header_safe(text) -> str:
    """`text` on one line: each run of line breaks and control characters becomes one space."""
    return " ".join(_UNSAFE_IN_HEADER.sub(" ", str(text)).split())


def email_subject(template, **names) -> str:
    """A subject line from a (translated) template and the names it mentions.

    The one place subjects are built: names typed by people (an event's or an
    organization's name) may hold line breaks, which would make the message
    unsendable (BadHeaderError); here they become spaces. The body keeps them.
    """
    text = str(template) % {key: header_safe(value) for key, value in names.items()} if names else str(template)
    return header_safe(text)


# --- senders ---------------------------------------------------------------------------------------


def site_sender_address() -> str:
    """The address part of DEFAULT_FROM_EMAIL: every email leaves from it, whoever it is sent for."""
    return parseaddr(settings.DEFAULT_FROM_EMAIL)[1]


def sender_in_name_of(name: str) -> str:
    """A From header "<name> <site address>": an organization's name with the site's address.

    The address stays the site's, so SPF, DKIM and DMARC of the sending domain hold; only the name
    readers see is the organization's. The name is typed by people: line breaks become spaces
    (header_safe) and quotes, commas and angle brackets are quoted by email.headerregistry, so a
    name cannot add a header or a second address.
    """
    display_name = header_safe(name)
    if not display_name:
        return settings.DEFAULT_FROM_EMAIL
    return str(Address(display_name=display_name, addr_spec=site_sender_address()))


# --- attachments -----------------------------------------------------------------------------------


def calendar_attachment(content: bytes, *, filename: str) -> MIMEBase:
    """An iCalendar file as an email attachment: text/calendar with METHOD=PUBLISH, as the file itself says.

    Not an "alternative" part (that is how meeting requests that expect a reply travel): an attachment
    the reader adds to their calendar.
    """
    part = MIMEText(content.decode("utf-8"), "calendar", "utf-8")
    part.set_param("method", "PUBLISH")
    part.add_header("Content-Disposition", "attachment", filename=filename)
    return part


class EmailWithInlineImages(EmailMultiAlternatives):
    """Text and HTML with images the HTML shows (`cid:`), and files attached beside them.

    Attachments that carry a Content-ID are the HTML's images; the rest are files. The MIME tree is
    mixed[alternative[text, related[html, images]], files]: with Django's `mixed_subtype = "related"`
    alone the files would sit inside the related part, where mail clients may hide them.
    """

    def _create_message(self, msg):
        encoding = self.encoding or settings.DEFAULT_CHARSET
        images = [part for part in self.attachments if isinstance(part, MIMEBase) and part["Content-ID"]]
        files = [part for part in self.attachments if not any(part is image for image in images)]
        alternative = SafeMIMEMultipart(_subtype="alternative", encoding=encoding)
        alternative.attach(msg)
        for content, mimetype in self.alternatives:
            part = self._create_mime_attachment(content, mimetype)
            if mimetype == "text/html" and images:
                related = SafeMIMEMultipart(_subtype="related", encoding=encoding)
                related.attach(part)
                for image in images:
                    related.attach(image)
                part = related
            alternative.attach(part)
        if not files:
            return alternative
        mixed = SafeMIMEMultipart(_subtype="mixed", encoding=encoding)
        mixed.attach(alternative)
        for file in files:
            mixed.attach(file if isinstance(file, MIMEBase) else self._create_attachment(*file))
        return mixed


# --- exactly once ----------------------------------------------------------------------------------


def send_once(claimable: QuerySet[Any], *, field: str, send: Callable[[], None]) -> bool:
    """Send an email at most once for the one row of `claimable`: claim `field`, send, or give the claim back.

    The claim is a compare-and-set on that row (`field` null -> now): of two workers, or two
    deliveries of the same webhook, one sets it and sends; the other finds it set and returns False.
    When sending fails the claim is cleared (only if it is still this caller's) and the error
    re-raised, so the task's retry sends it then. `claimable` names the row and any condition that
    makes it due, e.g. `Order.objects.filter(pk=order.pk, status="expired")`.
    """
    now = timezone.now()
    if not claimable.filter(**{f"{field}__isnull": True}).update(**{field: now}):
        return False
    try:
        send()
    except Exception:
        # The stored stamp is truncated to the millisecond (MillisecondDateTimeField), as is this filter.
        claimable.filter(**{field: now}).update(**{field: None})
        raise
    return True
