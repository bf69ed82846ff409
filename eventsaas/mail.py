"""Email helpers shared by every app that sends mail."""

import re
from collections.abc import Callable
from datetime import timedelta
from email.headerregistry import Address
from email.mime.base import MIMEBase
from email.mime.text import MIMEText
from email.utils import parseaddr
from typing import Any

from django.conf import settings
from django.core.mail import EmailMultiAlternatives
from django.core.mail.message import SafeMIMEMultipart
from django.db.models import Q, QuerySet
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


#: A claim older than this belongs to a worker that died (killed, or lost with the task redelivered):
#: the email may be sent again, a possible second copy rather than a lost one.
SEND_CLAIM_STALE_AFTER = timedelta(minutes=15)


def send_once(due: QuerySet[Any], *, pk: Any, claim_field: str, sent_field: str, send: Callable[[], None]) -> bool:
    """Send an email at most once for row `pk` of `due`: claim, send, mark sent; or give the claim back.

    The claim is a compare-and-set on that one row (`claim_field` null or stale -> now, while
    `sent_field` is null and the row is still in `due`): of two workers, or two deliveries of the same
    webhook, one wins and sends; the other returns False. When sending fails the claim is cleared
    (only if it is still this caller's) and the error re-raised, so the task's retry sends it. A
    claim left by a worker that died is taken over after SEND_CLAIM_STALE_AFTER. `due` names the
    conditions that make the email due, e.g. `Order.objects.filter(status="expired")`.
    """
    now = timezone.now()
    row = due.filter(pk=pk, **{f"{sent_field}__isnull": True})
    free = Q(**{f"{claim_field}__isnull": True}) | Q(**{f"{claim_field}__lt": now - SEND_CLAIM_STALE_AFTER})
    if not row.filter(free).update(**{claim_field: now}):
        return False
    mine = due.model._default_manager.filter(pk=pk, **{claim_field: now})
    try:
        send()
    except Exception:
        # Stored stamps are truncated to the millisecond (MillisecondDateTimeField), and so is this filter.
        mine.update(**{claim_field: None})
        raise
    due.model._default_manager.filter(pk=pk).update(**{sent_field: timezone.now()})
    return True
