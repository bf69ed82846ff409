"""MongoDB (django-mongodb-backend) support: settings, app configs, the atomic() helper.

Imported by settings, so it must not import models or touch the database.
See docs/mongodb.md for what differs on MongoDB and why the code does not rely on it.
"""

from urllib.parse import urlsplit

from django.core.exceptions import ImproperlyConfigured

# Replacements for Django's contrib apps in INSTALLED_APPS when running on MongoDB.
MONGODB_APP_CONFIGS = {
    "django.contrib.admin": "eventsaas.mongo_apps.MongoAdminConfig",
    "django.contrib.auth": "eventsaas.mongo_apps.MongoAuthConfig",
    "django.contrib.contenttypes": "eventsaas.mongo_apps.MongoContentTypesConfig",
    "axes": "eventsaas.mongo_apps.MongoAxesConfig",
}


def mongodb_database_settings(url: str, name: str = "") -> dict:
    """DATABASES["default"] for a mongodb:// or mongodb+srv:// URL.

    The whole connection string goes in HOST (the backend's documented form);
    the database name comes from the URL path or MONGODB_NAME.
    """
    db_name = name or urlsplit(url).path.lstrip("/")
    if not db_name:
        raise ImproperlyConfigured(
            "Name the MongoDB database in the URL path (mongodb://host/eventsaas) or MONGODB_NAME"
        )
    return {"ENGINE": "django_mongodb_backend", "HOST": url, "NAME": db_name}
