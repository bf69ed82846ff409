from django.apps import AppConfig


class TenantsConfig(AppConfig):
    default_auto_field = "django.db.models.BigAutoField"
    name = "tenants"

    def ready(self):
        from eventsaas.health import readiness_check_register
        from tenants import keys

        # /readyz fails while the API cannot sign a token (production without a readable JWT_PRIVATE_KEY_FILES).
        readiness_check_register("signing_key", lambda: keys.keyring())
