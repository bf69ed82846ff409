"""Organizer tokens (log in, refresh, log out) and the public keys."""

from django.contrib.auth import authenticate
from django.http import JsonResponse
from django.utils.translation import gettext as _
from django.views.decorators.cache import cache_control
from django.views.decorators.http import require_GET
from django_ratelimit.core import is_ratelimited
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import serializers, status
from rest_framework.permissions import AllowAny
from rest_framework.response import Response
from rest_framework.views import APIView
from rest_framework_simplejwt.exceptions import TokenError

from eventsaas.api import BAD_REQUEST, ERROR, StrictSerializer
from tenants import tokens
from tenants.keys import keyring
from tenants.throttling import lockout_response

TOKEN_NOT_VALID = OpenApiResponse(
    ERROR,
    description="`token_not_valid`: invalid, expired, used up or revoked refresh token; "
    "`token_reused`: it had been used before, so every token of that login is now revoked",
)


def _token_error(exc) -> Response:
    code = "token_reused" if isinstance(exc, tokens.TokenReused) else "token_not_valid"
    return Response(
        {"code": code, "detail": str(exc)},
        status=status.HTTP_401_UNAUTHORIZED,
        headers={"WWW-Authenticate": 'Bearer realm="api"'},
    )


@require_GET
@cache_control(public=True, max_age=300)
def jwks(request):
    """The public keys that verify every token this deployment signs."""
    return JsonResponse(keyring().jwks())


class TokenPairSerializer(serializers.Serializer):
    access = serializers.CharField()
    refresh = serializers.CharField()


class TokenObtainApi(APIView):
    authentication_classes: list = []
    permission_classes = [AllowAny]

    class InputSerializer(StrictSerializer):
        email = serializers.EmailField()
        password = serializers.CharField(max_length=256, trim_whitespace=False)

    @extend_schema(
        operation_id="organizer_token",
        request=InputSerializer,
        responses={
            200: TokenPairSerializer,
            400: BAD_REQUEST,
            401: OpenApiResponse(ERROR, description="Wrong email or password"),
            429: OpenApiResponse(
                ERROR, description="Too many attempts from this client address or for this account; see Retry-After"
            ),
        },
        tags=["auth"],
    )
    def post(self, request):
        if is_ratelimited(request._request, group="organizer-token", key="ip", rate="20/m", increment=True):
            return Response(
                {"code": "throttled", "detail": _("Too many attempts.")},
                status=status.HTTP_429_TOO_MANY_REQUESTS,
                headers={"Retry-After": "60"},
            )
        data = self.InputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        user = authenticate(
            request._request, username=data.validated_data["email"].lower(), password=data.validated_data["password"]
        )
        if getattr(request._request, "axes_locked_out", False):
            # django-axes refused (or just locked) this address or account; no password was checked.
            return lockout_response(request._request)
        if user is None:
            return Response(
                {"code": "invalid_credentials", "detail": _("Wrong email or password.")},
                status=status.HTTP_401_UNAUTHORIZED,
                headers={"WWW-Authenticate": 'Bearer realm="api"'},
            )
        return Response(tokens.organizer_token_pair(user))


class TokenRefreshApi(APIView):
    authentication_classes: list = []
    permission_classes = [AllowAny]

    class InputSerializer(StrictSerializer):
        refresh = serializers.CharField(max_length=4096)

    @extend_schema(
        operation_id="organizer_token_refresh",
        request=InputSerializer,
        responses={200: TokenPairSerializer, 400: BAD_REQUEST, 401: TOKEN_NOT_VALID},
        description="Rotates: answers a new access token and the next refresh token; the one sent is used up.",
        tags=["auth"],
    )
    def post(self, request):
        data = self.InputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        try:
            return Response(tokens.organizer_token_refresh(data.validated_data["refresh"]))
        except (TokenError, tokens.InvalidToken) as exc:
            return _token_error(exc)


class LogoutApi(APIView):
    authentication_classes: list = []
    permission_classes = [AllowAny]

    class InputSerializer(StrictSerializer):
        refresh = serializers.CharField(max_length=4096)

    @extend_schema(
        operation_id="organizer_logout",
        request=InputSerializer,
        responses={204: None, 400: BAD_REQUEST, 401: TOKEN_NOT_VALID},
        description="Ends this login: its refresh token and every access token it issued stop working. "
        "Logging out twice is harmless.",
        tags=["auth"],
    )
    def post(self, request):
        data = self.InputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        try:
            tokens.organizer_logout(data.validated_data["refresh"])
        except (TokenError, tokens.InvalidToken) as exc:
            return _token_error(exc)
        return Response(status=status.HTTP_204_NO_CONTENT)
