"""Response headers Django has no setting for."""

from django.conf import settings


class PermissionsPolicyMiddleware:
    """Permissions-Policy on every response: browser features the pages do not use are off.

    The camera stays allowed for this site's own pages (check-in scans QR codes).
    """

    def __init__(self, get_response):
        self.get_response = get_response
        self.value = ", ".join(f"{feature}={allow}" for feature, allow in settings.PERMISSIONS_POLICY.items())

    def __call__(self, request):
        response = self.get_response(request)
        response.headers.setdefault("Permissions-Policy", self.value)
        return response
