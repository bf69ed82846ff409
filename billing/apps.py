from django.apps import AppConfig


class BillingConfig(AppConfig):
    default_auto_field = "django.db.models.BigAutoField"
    name = "billing"

    def ready(self):
        # Django's hook for wiring an app once the registry is ready: events' pages get this app's numbers.
        from billing.hooks import register

        register()
