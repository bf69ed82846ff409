from django.apps import AppConfig


class GuestsConfig(AppConfig):
    default_auto_field = "django.db.models.BigAutoField"
    name = "guests"

    def ready(self):
        # Django's hook for wiring an app once the registry is ready: events' pages get this app's numbers.
        from guests.hooks import register

        register()
