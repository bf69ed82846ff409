"""OpenAPI generation (drf-spectacular) tweaks."""

from drf_spectacular import openapi
from drf_spectacular.contrib.django_filters import DjangoFilterExtension
from drf_spectacular.extensions import OpenApiAuthenticationExtension, OpenApiSerializerExtension


class AutoSchema(openapi.AutoSchema):
    """Names nested serializers after their view: `GuestLoginApi.InputSerializer` -> `GuestLoginInput`."""

    def get_serializer_name(self, serializer, direction):
        qualname = type(serializer).__qualname__
        if "." not in qualname:
            return super().get_serializer_name(serializer, direction)
        outer, inner = qualname.split(".")[-2:]
        return outer.removesuffix("Api") + inner.removesuffix("Serializer")


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
