from django.apps import AppConfig
from django.utils.translation import gettext_lazy as _


class PlatformConfig(AppConfig):
    """The platform under the apps: what every app may use and none owns (docs/architecture.md)."""

    name = "eventsaas"
    verbose_name = _("Platform")
