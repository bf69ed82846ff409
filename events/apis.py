"""The organizer's event API: events of an organization, their numbers and reports."""

from django.conf import settings
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import serializers, status
from rest_framework.response import Response
from rest_framework.views import APIView

from events import selectors, services
from events.models import Event
from eventsaas.api import (
    BAD_REQUEST,
    FORBIDDEN,
    NOT_FOUND,
    AwareDateTimeField,
    Pagination,
    StrictSerializer,
    acting_user,
    paginated_response,
)
from guests.models import Guest
from guests.selectors import ACTIVITY_SORTS, dietary_report, event_stats, guest_activity
from tenants.permissions import IsOrganizer, organizer_event, organizer_tenant

MAX_QUESTIONS = 50


class EventQuestionSerializer(serializers.Serializer):
    key = serializers.CharField()
    label = serializers.CharField()
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


class DietaryGuestSerializer(serializers.Serializer):
    id = serializers.UUIDField(source="pk")
    first_name = serializers.CharField()
    last_name = serializers.CharField()
    num_guests = serializers.IntegerField()
    group_id = serializers.UUIDField(allow_null=True)


class EventQuestionInputSerializer(StrictSerializer):
    key = serializers.SlugField(max_length=40, help_text="Stable: RSVP answers are stored under it.")
    label = serializers.CharField(max_length=300)
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
    questions = EventQuestionInputSerializer(many=True, max_length=MAX_QUESTIONS, required=False)


def _event_fields(validated_data: dict) -> dict:
    fields = dict(validated_data)
    if "questions" in fields:
        fields["questions"] = [dict(question) for question in fields["questions"]]
    return fields


class OrganizationEventsApi(APIView):
    permission_classes = [IsOrganizer]

    class FilterSerializer(serializers.Serializer):
        include_archived = serializers.BooleanField(required=False, default=False)

    class ListOutputSerializer(EventSerializer):
        numbers = EventNumbersSerializer()

    class CreateInputSerializer(EventInputSerializer):
        name = serializers.CharField(max_length=200)
        starts_at = AwareDateTimeField()

    @extend_schema(
        operation_id="event_list",
        parameters=[FilterSerializer],
        responses={200: ListOutputSerializer(many=True), 400: BAD_REQUEST, 404: NOT_FOUND},
        tags=["events"],
    )
    def get(self, request, org_slug):
        tenant = organizer_tenant(request, org_slug)
        filters = self.FilterSerializer(data=request.query_params)
        filters.is_valid(raise_exception=True)
        events = selectors.event_list(tenant=tenant, include_archived=filters.validated_data["include_archived"])
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


class EventDetailApi(APIView):
    permission_classes = [IsOrganizer]

    class UpdateInputSerializer(EventInputSerializer):
        pass

    @extend_schema(operation_id="event_read", responses={200: EventSerializer, 404: NOT_FOUND}, tags=["events"])
    def get(self, request, event_id):
        event = organizer_event(request, event_id)
        return Response(EventSerializer(event).data)

    @extend_schema(
        operation_id="event_update",
        request=UpdateInputSerializer,
        responses={200: EventSerializer, 400: BAD_REQUEST, 403: FORBIDDEN, 404: NOT_FOUND},
        tags=["events"],
    )
    def patch(self, request, event_id):
        event = organizer_event(request, event_id, write=True)
        data = self.UpdateInputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        event = services.event_update(
            event=event, acting_user=acting_user(request), **_event_fields(data.validated_data)
        )
        return Response(EventSerializer(event).data)


class EventArchiveApi(APIView):
    permission_classes = [IsOrganizer]

    @extend_schema(
        operation_id="event_archive",
        request=None,
        responses={200: EventSerializer, 403: FORBIDDEN, 404: NOT_FOUND},
        description="Guests can no longer log in or answer; every record is kept. Archiving twice is harmless.",
        tags=["events"],
    )
    def post(self, request, event_id):
        event = organizer_event(request, event_id, write=True)
        event = services.event_archive(event=event, acting_user=acting_user(request))
        return Response(EventSerializer(event).data)


class EventStatsApi(APIView):
    permission_classes = [IsOrganizer]

    class OutputSerializer(serializers.Serializer):
        invited = serializers.IntegerField()
        coming = serializers.IntegerField()
        declined = serializers.IntegerField()
        pending = serializers.IntegerField()
        never_logged_in = serializers.IntegerField()
        invitations_sent = serializers.IntegerField()
        head_count = serializers.IntegerField(help_text="People coming, as answered by the coming guests")
        expected_head_count = serializers.IntegerField(help_text="People invited, children without a code included")
        dietary_needs = serializers.IntegerField(help_text="Coming guests who gave dietary needs")

    @extend_schema(operation_id="event_stats", responses={200: OutputSerializer, 404: NOT_FOUND}, tags=["events"])
    def get(self, request, event_id):
        event = organizer_event(request, event_id)
        return Response(self.OutputSerializer(event_stats(event=event)).data)


class EventDietaryApi(APIView):
    permission_classes = [IsOrganizer]

    class OutputSerializer(serializers.Serializer):
        dietary = serializers.CharField()
        head_count = serializers.IntegerField(help_text="Coming people: each guest's answered number, at least 1")
        guests = DietaryGuestSerializer(many=True)

    @extend_schema(
        operation_id="event_dietary_report",
        responses={200: OutputSerializer(many=True), 404: NOT_FOUND},
        description="Coming guests' dietary needs, grouped by the text given (case-insensitive), most heads first.",
        tags=["events"],
    )
    def get(self, request, event_id):
        event = organizer_event(request, event_id)
        return Response(self.OutputSerializer(dietary_report(event=event), many=True).data)


class EventActivityApi(APIView):
    permission_classes = [IsOrganizer]
    pagination_class = Pagination

    class FilterSerializer(serializers.Serializer):
        sort = serializers.ChoiceField(choices=list(ACTIVITY_SORTS), required=False, default="last_access")
        never_opened = serializers.BooleanField(
            required=False, default=False, help_text="Only guests who never logged in"
        )

    class OutputSerializer(serializers.Serializer):
        id = serializers.UUIDField()
        first_name = serializers.CharField()
        last_name = serializers.CharField()
        status = serializers.ChoiceField(choices=Guest.Status.choices)
        last_login_at = serializers.DateTimeField(allow_null=True)
        last_access_at = serializers.DateTimeField(allow_null=True)
        invited_at = serializers.DateTimeField(allow_null=True)
        rsvp_at = serializers.DateTimeField(allow_null=True)

    @extend_schema(
        operation_id="event_activity",
        parameters=[FilterSerializer],
        responses={
            200: OutputSerializer(many=True),
            400: BAD_REQUEST,
            404: OpenApiResponse(description="No such event in your organizations, or no such page"),
        },
        tags=["events"],
    )
    def get(self, request, event_id):
        event = organizer_event(request, event_id)
        filters = self.FilterSerializer(data=request.query_params)
        filters.is_valid(raise_exception=True)
        guests = guest_activity(
            event=event,
            sort=filters.validated_data["sort"],
            never_opened_only=filters.validated_data["never_opened"],
        )
        return paginated_response(queryset=guests, serializer_class=self.OutputSerializer, request=request, view=self)
