"""The language of pages for visitors without an account (guests, ticket buyers)."""

from django.conf import settings


def visitor_language(request, default: str) -> str:
    """An explicit choice (the language switcher's cookie) wins over `default`, the event's or order's language."""
    chosen = request.COOKIES.get(settings.LANGUAGE_COOKIE_NAME)
    if chosen in dict(settings.LANGUAGES):
        return chosen
    return default
