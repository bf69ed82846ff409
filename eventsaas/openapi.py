"""OpenAPI generation (drf-spectacular) tweaks."""

from drf_spectacular import openapi
from drf_spectacular.contrib.django_filters import DjangoFilterExtension
from drf_spectacular.extensions import OpenApiAuthenticationExtension, OpenApiSerializerExtension
from drf_spectacular.utils import OpenApiResponse
from rest_framework import permissions

from eventsaas.api import ERROR

NOT_AUTHENTICATED = (
    "`not_authenticated`: no token; `authentication_failed`: a token that is malformed, expired, "
    "signed by an unknown key, not an access token, or no longer valid"
)
PERMISSION_DENIED = "`permission_denied`: a token this endpoint is not for"
THROTTLED = "`throttled`: too many requests; wait `Retry-After` seconds"

# Permissions that refuse no authenticated caller: they cannot answer a 403 to a valid token.
_ANY_AUTHENTICATED = (permissions.AllowAny, permissions.IsAuthenticated, permissions.IsAuthenticatedOrReadOnly)


class AutoSchema(openapi.AutoSchema):
    """Names nested serializers after their view: `GuestLoginApi.InputSerializer` -> `GuestLoginInput`.

    Every operation also documents the errors DRF answers before its handler runs, as its view is
    configured (authentication, permission and throttle classes), in the API's error envelope:

    - 401 when a permission class refuses anonymous callers (403 if the first authenticator names
      no `WWW-Authenticate` challenge: DRF's answer then);
    - 403 when a permission class can refuse an authenticated caller (a guest's token on an
      organizer endpoint and the reverse), added to the description of a 403 the view documents;
    - 429 when the view has throttle classes.

    Operations open to anonymous callers gain nothing: a 401 they answer (a wrong login, a token
    sent where none is needed) is theirs to document.
    """

    def get_serializer_name(self, serializer, direction):
        qualname = type(serializer).__qualname__
        if "." not in qualname:
            return super().get_serializer_name(serializer, direction)
        outer, inner = qualname.split(".")[-2:]
        return outer.removesuffix("Api") + inner.removesuffix("Serializer")

    def _get_response_bodies(self, direction="response"):
        responses = super()._get_response_bodies(direction)
        if direction != "response":
            return responses
        view_permissions = self.view.get_permissions()
        if any(not self._lets_anonymous_in(permission) for permission in view_permissions):
            authenticators = self.view.get_authenticators()
            challenge = authenticators[0].authenticate_header(self.view.request) if authenticators else None
            headers = {"WWW-Authenticate": {"schema": {"type": "string"}}} if challenge else {}
            self._document_error(responses, "401" if challenge else "403", NOT_AUTHENTICATED, headers)
        refusals = [permission for permission in view_permissions if type(permission) not in _ANY_AUTHENTICATED]
        if refusals:
            messages = sorted({str(message) for p in refusals if (message := getattr(p, "message", None))})
            self._document_error(
                responses, "403", f"{PERMISSION_DENIED} ({' '.join(messages)})" if messages else PERMISSION_DENIED
            )
        if self.view.throttle_classes:
            retry_after = {"Retry-After": {"schema": {"type": "integer"}, "description": "Seconds to wait"}}
            self._document_error(responses, "429", THROTTLED, retry_after)
        return dict(sorted(responses.items()))

    def _lets_anonymous_in(self, permission) -> bool:
        if isinstance(permission, permissions.IsAuthenticatedOrReadOnly):
            return self.method in permissions.SAFE_METHODS
        return isinstance(permission, permissions.AllowAny)

    def _document_error(self, responses: dict, code: str, description: str, headers: dict | None = None) -> None:
        """Adds `code` in the error envelope, or adds `description` to the view's own `code` response."""
        if code not in responses:
            responses[code] = self._get_response_for_code(OpenApiResponse(ERROR, description=description), code)
            if headers:
                responses[code]["headers"] = headers
        elif description not in responses[code]["description"]:
            responses[code]["description"] = f"{responses[code]['description']}; {description}".lstrip("; ")


class BearerJWTScheme(OpenApiAuthenticationExtension):
    target_class = "tenants.authentication.JWTAuthentication"
    name = "bearerJWT"

    def get_security_definition(self, auto_schema):
        return {"type": "http", "scheme": "bearer", "bearerFormat": "JWT (RS256, keys at /.well-known/jwks.json)"}


class StrictSerializerScheme(OpenApiSerializerExtension):
    """A StrictSerializer refuses unknown fields: the request schema says so (`additionalProperties: false`)."""

    target_class = "eventsaas.api.StrictSerializer"
    match_subclasses = True

    def map_serializer(self, auto_schema, direction):
        schema = auto_schema._map_serializer(self.target, direction, bypass_extensions=True)
        if direction == "request":
            schema["additionalProperties"] = False
        return schema


class ListFilterScheme(DjangoFilterExtension):
    """django-filter's query parameters, plus each list's defaults and length limits (eventsaas.filters)."""

    priority = 1  # over drf-spectacular's own extension for the same backend

    def resolve_filter_field(self, auto_schema, model, filterset_class, field_name, filter_field):
        parameters = super().resolve_filter_field(auto_schema, model, filterset_class, field_name, filter_field)
        defaults = getattr(filterset_class, "defaults", {})
        for parameter in parameters:
            if field_name in defaults:
                parameter["schema"]["default"] = defaults[field_name]
            if filter_field.extra.get("max_length"):
                parameter["schema"]["maxLength"] = filter_field.extra["max_length"]
        return parameters
