"""Email helpers shared by every app that sends mail."""

import re

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
