from django.apps import AppConfig


class RsvpConfig(AppConfig):
    default_auto_field = "django.db.models.BigAutoField"
    name = "rsvp"

    def ready(self):
        # Django's hook for wiring an app once the registry is ready: events' pages get this app's numbers.
        from rsvp.hooks import register

        register()
