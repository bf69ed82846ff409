"""The baseline of bench/guest_http.py: a bare Django JSON view, no middleware, no apps, no database.

    gunicorn bench.bare_django:application

What a request costs with Django and nothing of ours: the ceiling the product's paths are measured against.
"""

from django.conf import settings

settings.configure(
    DEBUG=False,
    SECRET_KEY="bench-only",
    ALLOWED_HOSTS=["*"],
    ROOT_URLCONF=__name__,
    MIDDLEWARE=[],
    INSTALLED_APPS=[],
    DATABASES={},
    USE_I18N=False,
)

import django  # noqa: E402  (settings first, as a one-file Django project does)
from django.core.wsgi import get_wsgi_application  # noqa: E402
from django.http import JsonResponse  # noqa: E402
from django.urls import path  # noqa: E402


def hello(request):
    return JsonResponse({"status": "ok", "greeting": "hello"})


urlpatterns = [path("", hello)]

django.setup()
application = get_wsgi_application()
