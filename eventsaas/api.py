"""Shared API pieces: strict serializers, pagination, and JSON errors (the parser is eventsaas.parsers)."""

from typing import TYPE_CHECKING

from django.contrib.auth import get_user_model
from django.core.exceptions import NON_FIELD_ERRORS, RequestDataTooBig
from django.core.exceptions import PermissionDenied as DjangoPermissionDenied
from django.core.exceptions import ValidationError as DjangoValidationError
from django.http import Http404
from django.utils import timezone
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy
from django_filters.rest_framework import DjangoFilterBackend
from django_filters.utils import translate_validation
from drf_spectacular.utils import OpenApiResponse, inline_serializer
from rest_framework import exceptions, serializers
from rest_framework.pagination import PageNumberPagination
from rest_framework.response import Response
from rest_framework.views import exception_handler as drf_exception_handler

from eventsaas.dates import MAX_YEAR, MIN_YEAR, OUT_OF_RANGE_MESSAGE, is_sane_datetime
from eventsaas.filters import ListFilterSet
from eventsaas.parsers import BodyTooLarge

if TYPE_CHECKING:
    from rest_framework.request import Request

    from tenants.models import User


class StrictSerializer(serializers.Serializer):
    """Rejects fields it does not know instead of silently ignoring them."""

    def to_internal_value(self, data):
        if isinstance(data, dict):
            unknown = sorted(set(data) - {name for name, f in self.fields.items() if not f.read_only})
            if unknown:
                raise serializers.ValidationError({name: [_("Unknown field.")] for name in unknown})
        return super().to_internal_value(data)


class AwareDateTimeField(serializers.DateTimeField):
    """ISO 8601 with a UTC offset, between the years 1900 and 2200.

    A time without an offset is ambiguous and refused rather than guessed; a
    year outside the range is a typing mistake (and near 1 or 9999 a date that
    may not exist in the event's time zone).
    """

    default_error_messages = {
        "naive": gettext_lazy("Give the time with a UTC offset, e.g. 2030-06-01T18:00:00+02:00."),
    }

    def enforce_timezone(self, value):
        if timezone.is_naive(value):
            self.fail("naive")
        if not is_sane_datetime(value):
            message = OUT_OF_RANGE_MESSAGE % {"min": MIN_YEAR, "max": MAX_YEAR}
            raise serializers.ValidationError(message, code="date_out_of_range")
        return super().enforce_timezone(value)


class Pagination(PageNumberPagination):
    page_size = 50
    page_size_query_param = "page_size"
    max_page_size = 500


def paginated_response(*, queryset, serializer_class, request, view) -> Response:
    """One page of `queryset` (sliced in the database) in the view's pagination envelope."""
    paginator = view.pagination_class()
    page = paginator.paginate_queryset(queryset, request, view=view)
    return paginator.get_paginated_response(serializer_class(page, many=True).data)


class FilteredListApi:
    # Mixin of a list endpoint whose query string is read by the list's FilterSet (`filterset_class`).
    # `valid_filters()` is the FilterSet with its values checked; a bad value is a 400 with the parameter's
    # errors (`{"code": "invalid", "errors": {"status": [...]}}`), as for a body. The OpenAPI parameters are
    # generated from the same FilterSet by drf-spectacular's django-filter support (eventsaas.openapi).
    # Comments, not a docstring: drf-spectacular would print a base class's docstring as the
    # description of every list operation that has none of its own.

    filterset_class: type[ListFilterSet]
    # Read by the schema generation only: the handlers call valid_filters() and their selectors.
    filter_backends = [DjangoFilterBackend]

    def get_queryset(self):
        # Only the schema generation asks: drf-spectacular finds the list's model (and its enums) here.
        return self.filterset_class._meta.model._default_manager.none()

    def valid_filters(self) -> ListFilterSet:
        request = self.request  # type: ignore[attr-defined]  # the APIView this mixin is combined with
        filterset = self.filterset_class(request.query_params, request=request)
        if not filterset.is_valid():
            raise translate_validation(filterset.errors)
        return filterset


def acting_user(request: "Request") -> "User":
    """The organizer account behind the token, for the services' audit records.

    Tokens are checked without the database; a write loads the account once, so
    a deactivated or deleted account cannot change anything with a token it still holds.
    """
    user_id = request.user.pk  # None for an anonymous request
    user = get_user_model().objects.filter(pk=user_id, is_active=True).first() if user_id is not None else None
    if user is None:
        raise exceptions.AuthenticationFailed(_("This account is no longer active."))
    return user


ERROR = inline_serializer("Error", {"code": serializers.CharField(), "detail": serializers.CharField()})
FIELD_ERRORS = inline_serializer(
    "FieldErrors",
    {
        "code": serializers.CharField(
            help_text="`invalid` (see `errors`), `parse_error` or `too_large` (see `detail`)"
        ),
        "errors": serializers.DictField(
            required=False, help_text="With `invalid`: messages by field; list items by their index."
        ),
        "detail": serializers.CharField(
            required=False, help_text="With `parse_error` or `too_large`: why the body was not read."
        ),
    },
)
BAD_REQUEST = OpenApiResponse(
    FIELD_ERRORS,
    description="`invalid`: field errors under `errors`, unknown fields included; `parse_error`: not JSON, "
    "nested too deeply, or holding a lone surrogate or NUL; `too_large`: a body over the size limit",
)
FORBIDDEN = OpenApiResponse(ERROR, description="Viewers can read this organization but not change it")
NOT_FOUND = OpenApiResponse(ERROR, description="Not found in your organizations (the same for another organization's)")


def exception_handler(exc, context):
    """DRF's handler, plus Django's ValidationError as a field-level 400 and a `code` on every error."""
    if isinstance(exc, RequestDataTooBig):
        # Django's own body limit (DATA_UPLOAD_MAX_MEMORY_SIZE), if it is ever reached first.
        exc = BodyTooLarge()
    if isinstance(exc, DjangoValidationError):
        detail = exc.message_dict if hasattr(exc, "error_dict") else {"non_field_errors": exc.messages}
        # Model-wide errors (unique together, clean()) come as __all__; DRF's name for them is non_field_errors.
        if NON_FIELD_ERRORS in detail:
            detail["non_field_errors"] = detail.pop(NON_FIELD_ERRORS)
        exc = exceptions.ValidationError(detail)
    elif isinstance(exc, Http404):
        exc = exceptions.NotFound()
    elif isinstance(exc, DjangoPermissionDenied):
        # A refusal that names itself (tenants.services.OrganizationNotVerified) keeps its code and message.
        api_code = getattr(exc, "api_code", None)
        exc = exceptions.PermissionDenied(detail=str(exc)) if api_code else exceptions.PermissionDenied()
        if api_code:
            exc.default_code = api_code
    response = drf_exception_handler(exc, context)
    if response is None:
        return response
    if isinstance(exc, exceptions.ValidationError):
        # Always wrapped: a field named "code" (the guest login's) must not pass for the envelope's code.
        errors = response.data if isinstance(response.data, dict) else {"non_field_errors": response.data}
        response.data = {"code": "invalid", "errors": errors}
    elif isinstance(response.data, dict) and "code" not in response.data:
        response.data = {"code": getattr(exc, "default_code", "error"), **response.data}
    return response
