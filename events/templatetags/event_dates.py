"""`{{ event.starts_at|event_local|date:"…" }}`: an event's date in the active time zone, never a failed page."""

from django import template

from eventsaas.dates import event_local as _event_local

register = template.Library()


@register.filter
def event_local(value):
    """The date in the active time zone ({% timezone %}); a stored date that does not exist there shows in UTC."""
    return _event_local(value)
