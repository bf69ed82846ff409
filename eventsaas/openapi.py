"""OpenAPI generation (drf-spectacular) tweaks."""

from drf_spectacular import openapi
from drf_spectacular.extensions import OpenApiAuthenticationExtension


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
