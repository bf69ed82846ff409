"""Dates shown to organizers and guests, always in the event's zone and with its label.

`{{ event.starts_at|event_local|date:"…" }}`: an event's date in the active time zone, never a failed page.
`{{ order.created_at|event_time:event }}`: "Sat 5 Dec 2026, 18:30 CET" (the argument: an event or a zone name).
`{% event_range event %}`: "Sat 5 Dec 2026, 22:00 – Sun 6 Dec, 02:00 CET" (both dates past midnight).
`{{ order.expires_at|event_clock:event }}`: "18:30 CET".
`{{ membership.created_at|event_day:zone_name }}`: "Sat 5 Dec 2026", for a day without its time.
`{{ event|event_zone }}`: "Europe/Madrid (CET)", for the line that says which zone a page uses.
"""

from django import template
from django.utils import timezone

from eventsaas.dates import event_local as _event_local
from eventsaas.dates import (
    format_event_clock,
    format_event_datetime,
    format_event_day,
    format_event_range,
    zone_from,
    zone_label,
)

register = template.Library()


def _zone_of(event_or_zone):
    return getattr(event_or_zone, "timezone", event_or_zone) or "UTC"


@register.filter
def event_local(value):
    """The date in the active time zone ({% timezone %}); a stored date that does not exist there shows in UTC."""
    return _event_local(value)


@register.filter
def event_time(value, event_or_zone):
    """`value` in the event's zone with the zone's label; "" for no date."""
    return format_event_datetime(value, _zone_of(event_or_zone))


@register.simple_tag
def event_range(event):
    """The event's start and end in its zone ("… 22:00 – Sun 6 Dec, 02:00 CET")."""
    return format_event_range(event.starts_at, event.ends_at, _zone_of(event))


@register.filter
def event_zone(event_or_zone):
    """The zone's name and its label right now: "Europe/Madrid (CET)"; plain "UTC" for UTC."""
    name = _zone_of(event_or_zone)
    local = _event_local(timezone.now(), zone_from(name))
    label = zone_label(local)
    if label == name or label.strip("()") == name:
        return name
    return f"{name} ({label})"


@register.filter
def event_clock(value, event_or_zone):
    """Only the time of day in the event's zone, with its label: "18:30 CET"."""
    return format_event_clock(value, _zone_of(event_or_zone))


@register.filter
def event_day(value, event_or_zone):
    """Only the day in the event's zone (or a zone's name): "Sat 5 Dec 2026"."""
    return format_event_day(value, _zone_of(event_or_zone))
