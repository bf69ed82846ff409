from django.apps import AppConfig
from django.db.models.signals import post_delete


def _event_deleted(sender, instance, **kwargs):
    # Also when an organization's deletion takes its events along, which never calls Event.delete():
    # a deleted event's guests must stop being served from any cache at once.
    from events.guest_view_versions import guest_view_changed

    guest_view_changed([instance.pk])


class EventsConfig(AppConfig):
    default_auto_field = "django.db.models.BigAutoField"
    name = "events"

    def ready(self):
        from events.models import Event

        post_delete.connect(_event_deleted, sender=Event, dispatch_uid="events.guest_view_event_deleted")
