"""The organizer's event API: events of an organization and their ticket types (whose list is also the
public shop window of a published ticketed event). The reports on an event's guests are guests' (guests/apis.py)."""

from django.conf import settings
from django.utils.translation import gettext as _
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import exceptions, serializers, status
from rest_framework.permissions import SAFE_METHODS, AllowAny
from rest_framework.response import Response
from rest_framework.views import APIView

from events import selectors, services
from events.filters import EventFilterSet, TicketTypeFilterSet
from events.models import Event, TicketType
from events.permissions import OrganizerEventApi, organizer_event
from events.throttling import RETRY_AFTER_SECONDS as ACCESS_CODE_RETRY_AFTER_SECONDS
from events.throttling import ticket_types_for_visitor
from eventsaas.api import (
    BAD_REQUEST,
    ERROR,
    FORBIDDEN,
    NOT_FOUND,
    AwareDateTimeField,
    FilteredListApi,
    StrictSerializer,
    acting_user,
)
from tenants.permissions import IsOrganizer, organizer_tenant

MAX_QUESTIONS = 50


class EventQuestionSerializer(serializers.Serializer):
    key = serializers.CharField()
    label = serializers.CharField()  # type: ignore[assignment]  # a field named "label", not Field.label
    choices = serializers.ListField(child=serializers.CharField())


class EventSerializer(serializers.Serializer):
    id = serializers.UUIDField()
    name = serializers.CharField()
    slug = serializers.CharField()
    description = serializers.CharField()
    status = serializers.ChoiceField(choices=Event.Status.choices)
    starts_at = serializers.DateTimeField()
    ends_at = serializers.DateTimeField(allow_null=True)
    timezone = serializers.CharField()
    location = serializers.CharField()
    dress_code = serializers.CharField()
    rsvp_deadline = serializers.DateTimeField(allow_null=True)
    language = serializers.ChoiceField(choices=settings.LANGUAGES)
    contact_email = serializers.EmailField(allow_blank=True)
    questions = EventQuestionSerializer(many=True)
    rsvp_open = serializers.BooleanField(source="is_rsvp_open")
    created_at = serializers.DateTimeField()
    updated_at = serializers.DateTimeField()


class EventNumbersSerializer(serializers.Serializer):
    invited = serializers.IntegerField()
    coming = serializers.IntegerField()
    declined = serializers.IntegerField()
    pending = serializers.IntegerField()
    head_count = serializers.IntegerField()


class EventQuestionInputSerializer(StrictSerializer):
    key = serializers.SlugField(max_length=40, help_text="Stable: RSVP answers are stored under it.")
    label = serializers.CharField(max_length=300)  # type: ignore[assignment]  # a field named "label"
    choices = serializers.ListField(
        child=serializers.CharField(max_length=200), max_length=50, required=False, default=list
    )


class EventInputSerializer(StrictSerializer):
    """The event's editable fields, each optional (a PATCH sends only what changes)."""

    name = serializers.CharField(max_length=200, required=False)
    description = serializers.CharField(allow_blank=True, max_length=10000, required=False)
    status = serializers.ChoiceField(choices=Event.Status.choices, required=False)
    starts_at = AwareDateTimeField(required=False)
    ends_at = AwareDateTimeField(allow_null=True, required=False)
    timezone = serializers.CharField(max_length=64, required=False, help_text="IANA name, e.g. Europe/Madrid")
    location = serializers.CharField(allow_blank=True, max_length=300, required=False)
    dress_code = serializers.CharField(allow_blank=True, max_length=200, required=False)
    rsvp_deadline = AwareDateTimeField(allow_null=True, required=False)
    language = serializers.ChoiceField(choices=settings.LANGUAGES, required=False)
    contact_email = serializers.EmailField(allow_blank=True, required=False)
    # many=True makes a ListSerializer, which takes max_length (the stubs type the child's __init__).
    questions = EventQuestionInputSerializer(many=True, max_length=MAX_QUESTIONS, required=False)  # type: ignore[call-arg]


def _event_fields(validated_data: dict) -> dict:
    fields = dict(validated_data)
    if "questions" in fields:
        fields["questions"] = [dict(question) for question in fields["questions"]]
    return fields


class OrganizationEventsApi(FilteredListApi, APIView):
    permission_classes = [IsOrganizer]
    filterset_class = EventFilterSet

    class ListOutputSerializer(EventSerializer):
        numbers = EventNumbersSerializer()

    class CreateInputSerializer(EventInputSerializer):
        name = serializers.CharField(max_length=200)
        starts_at = AwareDateTimeField()

    @extend_schema(
        operation_id="event_list",
        responses={200: ListOutputSerializer(many=True), 400: BAD_REQUEST, 404: NOT_FOUND},
        tags=["events"],
    )
    def get(self, request, org_slug):
        tenant = organizer_tenant(request, org_slug)
        filters = self.valid_filters().values()
        events = selectors.event_list(tenant=tenant, include_archived=filters["include_archived"])
        return Response(self.ListOutputSerializer(events, many=True).data)

    @extend_schema(
        operation_id="event_create",
        request=CreateInputSerializer,
        responses={201: EventSerializer, 400: BAD_REQUEST, 403: FORBIDDEN, 404: NOT_FOUND},
        tags=["events"],
    )
    def post(self, request, org_slug):
        tenant = organizer_tenant(request, org_slug, write=True)
        data = self.CreateInputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        event = services.event_create(
            tenant=tenant, acting_user=acting_user(request), **_event_fields(data.validated_data)
        )
        return Response(EventSerializer(event).data, status=status.HTTP_201_CREATED)


class EventDetailApi(OrganizerEventApi):
    class UpdateInputSerializer(EventInputSerializer):
        pass

    @extend_schema(operation_id="event_read", responses={200: EventSerializer, 404: NOT_FOUND}, tags=["events"])
    def get(self, request, event_id):
        event = self.event
        return Response(EventSerializer(event).data)

    @extend_schema(
        operation_id="event_update",
        request=UpdateInputSerializer,
        responses={200: EventSerializer, 400: BAD_REQUEST, 403: FORBIDDEN, 404: NOT_FOUND},
        tags=["events"],
    )
    def patch(self, request, event_id):
        event = self.event
        data = self.UpdateInputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        event = services.event_update(
            event=event, acting_user=acting_user(request), **_event_fields(data.validated_data)
        )
        return Response(EventSerializer(event).data)


class EventArchiveApi(OrganizerEventApi):
    @extend_schema(
        operation_id="event_archive",
        request=None,
        responses={200: EventSerializer, 403: FORBIDDEN, 404: NOT_FOUND},
        description="Guests can no longer log in or answer; every record is kept. Archiving twice is harmless.",
        tags=["events"],
    )
    def post(self, request, event_id):
        event = self.event
        event = services.event_archive(event=event, acting_user=acting_user(request))
        return Response(EventSerializer(event).data)


# --- Ticket types of ticketed events -----------------------------------------------------------------

# Stripe's largest amount (99,999,999 in the currency's minor unit).
MAX_PRICE = 99_999_999
MAX_CAPACITY = 1_000_000


def organizer_ticket_type(request, ticket_type_id, *, write: bool = False) -> TicketType:
    """A ticket type of one of the token's organizations (another organization's is a 404), role checked."""
    ticket_type = TicketType.objects.filter(pk=ticket_type_id, tenant_id__in=request.user.tenant_ids).first()
    if ticket_type is None:
        raise exceptions.NotFound()
    ticket_type.event = organizer_event(request, ticket_type.event_id, write=write)
    return ticket_type


def _caller_organizes(request, event_id) -> Event | None:
    """The event when the (optional) token is an organizer's of the event's organization, else None."""
    if not getattr(request.user, "is_organizer", False):
        return None
    try:
        return organizer_event(request, event_id)
    except exceptions.NotFound:
        return None


class TicketTypeSerializer(serializers.Serializer):
    """A ticket type as buyers see it."""

    id = serializers.UUIDField()
    name = serializers.CharField()
    description = serializers.CharField()
    price = serializers.IntegerField(help_text="In the currency's minor unit: 2500 is 25.00")
    currency = serializers.CharField(help_text="ISO 4217 code in lower case, e.g. eur")
    remaining = serializers.IntegerField(help_text="Seats neither sold nor held by an unpaid order")
    sold_out = serializers.BooleanField(source="is_sold_out")
    max_per_order = serializers.IntegerField()
    sales_start = serializers.DateTimeField(allow_null=True)
    sales_end = serializers.DateTimeField(allow_null=True)


class TicketTypeManagedSerializer(TicketTypeSerializer):
    """A ticket type as its organizers see it: the counters and the settings buyers do not see."""

    capacity = serializers.IntegerField()
    sold = serializers.IntegerField()
    reserved = serializers.IntegerField(help_text="Held by orders awaiting payment")
    access_code = serializers.CharField(help_text="Blank: listed for everyone; set: only with this code")
    is_active = serializers.BooleanField(help_text="Off: not on sale, whatever the sales window")
    in_sales_window = serializers.BooleanField(source="is_in_sales_window", help_text="On sale at this moment")
    position = serializers.IntegerField()
    created_at = serializers.DateTimeField()


class TicketTypeListItemSerializer(TicketTypeManagedSerializer):
    """The list's items: buyers get the public fields, the event's organizers all of them."""

    def get_fields(self):
        fields = super().get_fields()
        public = set(TicketTypeSerializer().get_fields())
        for name, field in fields.items():
            if name not in public:
                field.required = False
                field.help_text = f"{field.help_text or ''} (organizers only)".strip()
        return fields


class TicketTypeInputSerializer(StrictSerializer):
    """A ticket type's editable fields, each optional (a PATCH sends only what changes)."""

    name = serializers.CharField(max_length=120, required=False)
    description = serializers.CharField(allow_blank=True, max_length=500, required=False)
    price = serializers.IntegerField(
        min_value=0, max_value=MAX_PRICE, required=False, help_text="In the currency's minor unit: 2500 is 25.00"
    )
    currency = serializers.CharField(
        min_length=3, max_length=3, required=False, help_text="ISO 4217 code, e.g. eur (stored in lower case)"
    )
    capacity = serializers.IntegerField(min_value=0, max_value=MAX_CAPACITY, required=False)
    sales_start = AwareDateTimeField(allow_null=True, required=False)
    sales_end = AwareDateTimeField(allow_null=True, required=False)
    max_per_order = serializers.IntegerField(min_value=1, max_value=100, required=False)
    access_code = serializers.CharField(
        allow_blank=True, max_length=40, required=False, help_text="Set: listed only to buyers who give this code"
    )
    is_active = serializers.BooleanField(required=False)
    position = serializers.IntegerField(min_value=0, max_value=32767, required=False)


class EventTicketTypesApi(FilteredListApi, APIView):
    """One path, two audiences: the list is the public shop window, adding a type is the organizer's."""

    permission_classes = [IsOrganizer]
    filterset_class = TicketTypeFilterSet

    def get_permissions(self):
        # Buyers need no token; one that is sent is still checked, and an organizer's shows everything.
        if self.request.method in SAFE_METHODS:
            return [AllowAny()]
        return super().get_permissions()

    class CreateInputSerializer(TicketTypeInputSerializer):
        name = serializers.CharField(max_length=120)
        price = serializers.IntegerField(
            min_value=0, max_value=MAX_PRICE, help_text="In the currency's minor unit: 2500 is 25.00"
        )
        capacity = serializers.IntegerField(min_value=0, max_value=MAX_CAPACITY)

    @extend_schema(
        operation_id="ticket_type_list",
        responses={
            200: TicketTypeListItemSerializer(many=True),
            400: BAD_REQUEST,
            401: OpenApiResponse(ERROR, description="A token was sent and is not valid (none is needed)"),
            404: OpenApiResponse(ERROR, description="No published ticketed event with this id"),
            429: OpenApiResponse(ERROR, description="Too many access codes that unlock nothing from this client"),
        },
        description=(
            "Public: the ticket types on sale now (sold-out ones included, with `sold_out`), those hidden behind "
            "`access_code` when it is given. With an organizer token of the event's organization: every type "
            "(hidden, off sale, outside the sales window), with the counters, also for a draft event."
        ),
        tags=["tickets"],
    )
    def get(self, request, event_id):
        filters = self.valid_filters().values()
        event = _caller_organizes(request, event_id)
        if event is not None:
            types = selectors.ticket_type_list(event=event)
            return Response(TicketTypeManagedSerializer(types, many=True).data)
        event = selectors.event_on_sale(event_id=event_id)
        visitor = ticket_types_for_visitor(request._request, event=event, access_code=filters["access_code"])
        if visitor.refused:
            return Response(
                {"code": "throttled", "detail": _("Too many wrong access codes. Please wait a minute and try again.")},
                status=status.HTTP_429_TOO_MANY_REQUESTS,
                headers={"Retry-After": str(ACCESS_CODE_RETRY_AFTER_SECONDS)},
            )
        return Response(TicketTypeSerializer(visitor.ticket_types, many=True).data)

    @extend_schema(
        operation_id="ticket_type_create",
        request=CreateInputSerializer,
        responses={201: TicketTypeManagedSerializer, 400: BAD_REQUEST, 403: FORBIDDEN, 404: NOT_FOUND},
        description="Only ticketed events sell tickets (another event's answer is a 400).",
        tags=["tickets"],
    )
    def post(self, request, event_id):
        event = organizer_event(request, event_id, write=True)
        data = self.CreateInputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        ticket_type = services.ticket_type_create(event=event, acting_user=acting_user(request), **data.validated_data)
        return Response(TicketTypeManagedSerializer(ticket_type).data, status=status.HTTP_201_CREATED)


class TicketTypeDetailApi(APIView):
    permission_classes = [IsOrganizer]

    class UpdateInputSerializer(TicketTypeInputSerializer):
        pass

    @extend_schema(
        operation_id="ticket_type_read",
        responses={200: TicketTypeManagedSerializer, 404: NOT_FOUND},
        tags=["tickets"],
    )
    def get(self, request, ticket_type_id):
        ticket_type = organizer_ticket_type(request, ticket_type_id)
        return Response(TicketTypeManagedSerializer(ticket_type).data)

    @extend_schema(
        operation_id="ticket_type_update",
        request=UpdateInputSerializer,
        responses={200: TicketTypeManagedSerializer, 400: BAD_REQUEST, 403: FORBIDDEN, 404: NOT_FOUND},
        description=(
            "The capacity cannot go below what is sold and held at that moment; the currency cannot change "
            "once tickets are sold or held."
        ),
        tags=["tickets"],
    )
    def patch(self, request, ticket_type_id):
        ticket_type = organizer_ticket_type(request, ticket_type_id, write=True)
        data = self.UpdateInputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        ticket_type = services.ticket_type_update(
            ticket_type=ticket_type, acting_user=acting_user(request), **data.validated_data
        )
        return Response(TicketTypeManagedSerializer(ticket_type).data)

    @extend_schema(
        operation_id="ticket_type_delete",
        responses={
            204: OpenApiResponse(description="Deleted"),
            400: OpenApiResponse(
                BAD_REQUEST.response,
                description="Tickets of this type were sold or are held: take it off sale (`is_active`) instead",
            ),
            403: FORBIDDEN,
            404: NOT_FOUND,
        },
        tags=["tickets"],
    )
    def delete(self, request, ticket_type_id):
        ticket_type = organizer_ticket_type(request, ticket_type_id, write=True)
        services.ticket_type_delete(ticket_type=ticket_type, acting_user=acting_user(request))
        return Response(status=status.HTTP_204_NO_CONTENT)
