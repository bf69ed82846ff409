"""The organizer's guest API: the guest list, adding guests (one or many), codes and households, and the
event reports that read guests (stats, dietary needs, custom questions, activity)."""

from django.utils.translation import gettext as _
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import exceptions, serializers, status
from rest_framework.response import Response

from events.permissions import OrganizerEventApi
from eventsaas.api import (
    BAD_REQUEST,
    FORBIDDEN,
    NOT_FOUND,
    FilteredListApi,
    Pagination,
    StrictSerializer,
    acting_user,
    paginated_response,
)
from eventsaas.validators import validate_no_control_characters
from guests import notifications, selectors, services
from guests.activity import track_activity
from guests.filters import GuestActivityFilterSet, GuestFilterSet
from guests.models import Guest, GuestActivity
from guests.permissions import OrganizerGuestApi
from guests.selectors import dietary_report, event_stats, guest_activity, question_report

MAX_GROUP_SIZE = 100


class GuestSerializer(serializers.Serializer):
    id = serializers.UUIDField()
    first_name = serializers.CharField()
    last_name = serializers.CharField()
    email = serializers.EmailField(allow_blank=True)
    phone = serializers.CharField()
    code = serializers.CharField(help_text="The personal code for the guest login")
    group_id = serializers.UUIDField(allow_null=True, help_text="Guests sharing it are one household")
    expected_guests = serializers.IntegerField()
    status = serializers.ChoiceField(choices=Guest.Status.choices)
    num_guests = serializers.IntegerField(
        help_text="People this guest counts: themselves plus anyone without a code; 0 unless coming"
    )
    dietary = serializers.CharField()
    answers = serializers.DictField(child=serializers.CharField())
    rsvp_at = serializers.DateTimeField(allow_null=True)
    answered_by = serializers.ChoiceField(
        source="answered_by_kind",
        choices=Guest.AnsweredBy.choices,
        allow_blank=True,
        help_text="Who gave the answer: `self`, `household` (another member) or `organizer`",
    )
    answered_by_guest_id = serializers.UUIDField(allow_null=True)
    answered_by_user_id = serializers.UUIDField(allow_null=True)
    last_login_at = serializers.DateTimeField(allow_null=True)
    last_access_at = serializers.DateTimeField(allow_null=True)
    invited_at = serializers.DateTimeField(allow_null=True)
    created_at = serializers.DateTimeField()


class GroupMemberSerializer(serializers.Serializer):
    id = serializers.UUIDField()
    first_name = serializers.CharField()
    last_name = serializers.CharField()
    status = serializers.ChoiceField(choices=Guest.Status.choices)
    num_guests = serializers.IntegerField()


class GuestInputSerializer(StrictSerializer):
    """A guest's editable fields; the organizer never sets the answer itself (status, num_guests)."""

    # The model's validator too: the service's full_clean would catch it, but here it is a field error before
    # anything runs, in one list with the request's other errors (and for every row of a bulk create).
    first_name = serializers.CharField(max_length=100, validators=[validate_no_control_characters])
    last_name = serializers.CharField(max_length=100, validators=[validate_no_control_characters])
    email = serializers.EmailField(allow_blank=True, required=False)
    phone = serializers.CharField(allow_blank=True, max_length=40, required=False)
    expected_guests = serializers.IntegerField(
        min_value=1,
        max_value=32767,
        required=False,
        help_text="This guest plus the people without their own code (small children)",
    )
    dietary = serializers.CharField(allow_blank=True, max_length=1000, required=False)


class RowsField(serializers.ListField):
    """A list of rows whose errors are keyed by row index; its length is checked before any row is."""

    def to_internal_value(self, data):
        if isinstance(data, list) and self.max_length is not None and len(data) > self.max_length:
            self.fail("max_length", max_length=self.max_length)
        return super().to_internal_value(data)


class EventGuestsApi(FilteredListApi, OrganizerEventApi):
    pagination_class = Pagination
    filterset_class = GuestFilterSet

    class CreateInputSerializer(GuestInputSerializer):
        pass

    @extend_schema(
        operation_id="guest_list",
        responses={
            200: GuestSerializer(many=True),
            400: BAD_REQUEST,
            404: OpenApiResponse(description="No such event in your organizations, or no such page"),
        },
        tags=["guests"],
    )
    def get(self, request, event_id):
        event = self.event
        guests = selectors.guest_list(event=event, filters=self.valid_filters().guest_filters())
        return paginated_response(queryset=guests, serializer_class=GuestSerializer, request=request, view=self)

    @extend_schema(
        operation_id="guest_create",
        request=CreateInputSerializer,
        responses={201: GuestSerializer, 400: BAD_REQUEST, 403: FORBIDDEN, 404: NOT_FOUND},
        tags=["guests"],
    )
    def post(self, request, event_id):
        event = self.event
        data = self.CreateInputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        guest = services.guest_create(event=event, acting_user=acting_user(request), **data.validated_data)
        return Response(GuestSerializer(guest).data, status=status.HTTP_201_CREATED)


class GuestBulkCreateApi(OrganizerEventApi):
    class InputSerializer(StrictSerializer):
        guests = RowsField(
            child=GuestInputSerializer(), allow_empty=False, min_length=1, max_length=services.BULK_CREATE_MAX_ROWS
        )

    class OutputSerializer(serializers.Serializer):
        guests = GuestSerializer(many=True)

    @extend_schema(
        operation_id="guest_bulk_create",
        request=InputSerializer,
        responses={
            201: OutputSerializer,
            400: OpenApiResponse(
                BAD_REQUEST.response,
                description=(
                    "Nothing was saved. Errors of invalid rows by their index, e.g. "
                    '`{"code": "invalid", "errors": {"guests": {"3": {"last_name": ["This field is required."]}}}}`; '
                    "more than 1,000 rows, an empty list, unknown fields or malformed JSON are refused the same way"
                ),
            ),
            403: FORBIDDEN,
            404: NOT_FOUND,
        },
        description="Add up to 1,000 guests at once, all or none; each gets its own code.",
        tags=["guests"],
    )
    def post(self, request, event_id):
        event = self.event
        data = self.InputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        try:
            guests = services.guest_bulk_create(
                event=event, rows=data.validated_data["guests"], acting_user=acting_user(request)
            )
        except services.GuestRowsInvalid as invalid:
            raise exceptions.ValidationError(
                {"guests": {str(index): errors for index, errors in invalid.row_errors.items()}}
            ) from None
        return Response(self.OutputSerializer({"guests": guests}).data, status=status.HTTP_201_CREATED)


class GuestDetailApi(OrganizerGuestApi):
    class OutputSerializer(GuestSerializer):
        group_members = GroupMemberSerializer(many=True, help_text="The other guests of the household")

    class UpdateInputSerializer(GuestInputSerializer):
        first_name = serializers.CharField(max_length=100, required=False, validators=[validate_no_control_characters])
        last_name = serializers.CharField(max_length=100, required=False, validators=[validate_no_control_characters])

    @extend_schema(operation_id="guest_read", responses={200: OutputSerializer, 404: NOT_FOUND}, tags=["guests"])
    def get(self, request, event_id, guest_id):
        guest = self.guest
        guest.group_members = selectors.group_members(guest=guest)
        track_activity(guest=guest, kind=GuestActivity.Kind.ORGANIZER_VIEW, request=request, actor_user=request.user)
        return Response(self.OutputSerializer(guest).data)

    @extend_schema(
        operation_id="guest_update",
        request=UpdateInputSerializer,
        responses={200: GuestSerializer, 400: BAD_REQUEST, 403: FORBIDDEN, 404: NOT_FOUND},
        tags=["guests"],
    )
    def patch(self, request, event_id, guest_id):
        guest = self.guest
        data = self.UpdateInputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        guest = services.guest_update(guest=guest, acting_user=acting_user(request), **data.validated_data)
        return Response(GuestSerializer(guest).data)

    @extend_schema(
        operation_id="guest_delete",
        responses={204: OpenApiResponse(description="Removed"), 403: FORBIDDEN, 404: NOT_FOUND},
        tags=["guests"],
    )
    def delete(self, request, event_id, guest_id):
        guest = self.guest
        services.guest_delete(guest=guest, acting_user=acting_user(request))
        return Response(status=status.HTTP_204_NO_CONTENT)


class GuestCodeRegenerateApi(OrganizerGuestApi):
    @extend_schema(
        operation_id="guest_code_regenerate",
        request=None,
        responses={200: GuestSerializer, 403: FORBIDDEN, 404: NOT_FOUND},
        description="A new personal code; the old one and the guest's tokens stop working at once.",
        tags=["guests"],
    )
    def post(self, request, event_id, guest_id):
        guest = self.guest
        guest = services.guest_code_regenerate(guest=guest, acting_user=acting_user(request))
        return Response(GuestSerializer(guest).data)


class GroupConnectApi(OrganizerEventApi):
    class InputSerializer(StrictSerializer):
        guests = serializers.ListField(
            child=serializers.UUIDField(), min_length=2, max_length=MAX_GROUP_SIZE, help_text="Guest ids"
        )

    class OutputSerializer(serializers.Serializer):
        group_id = serializers.UUIDField()
        members = GroupMemberSerializer(many=True)

    @extend_schema(
        operation_id="guest_group_connect",
        request=InputSerializer,
        responses={200: OutputSerializer, 400: BAD_REQUEST, 403: FORBIDDEN, 404: NOT_FOUND},
        description=(
            "Make the guests one household. A selected guest's existing group is kept, so adding a "
            "person to a household does not split it. Every id must be a guest of this event."
        ),
        tags=["guests"],
    )
    def post(self, request, event_id):
        event = self.event
        data = self.InputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        try:
            group = services.guest_group_connect(
                event=event, guest_ids=data.validated_data["guests"], acting_user=acting_user(request)
            )
        except ValueError:
            raise exceptions.ValidationError({"guests": [_("Choose at least two guests of this event.")]}) from None
        members = selectors.groups_of(event=event, group_ids=[group.group_id]).get(group.group_id, [])
        return Response(self.OutputSerializer({"group_id": group.group_id, "members": members}).data)


class GuestGroupLeaveApi(OrganizerGuestApi):
    @extend_schema(
        operation_id="guest_group_leave",
        request=None,
        responses={200: GuestSerializer, 403: FORBIDDEN, 404: NOT_FOUND},
        description="Take the guest out of its household; the others stay together.",
        tags=["guests"],
    )
    def post(self, request, event_id, guest_id):
        guest = self.guest
        guest = services.guest_group_leave(guest=guest, acting_user=acting_user(request))
        return Response(GuestSerializer(guest).data)


class InvitationsQueuedSerializer(serializers.Serializer):
    queued = serializers.IntegerField(help_text="Invitations queued (sent by a worker after this request)")
    without_email = serializers.IntegerField(help_text="Selected guests skipped because they have no email")


class GuestInviteApi(OrganizerGuestApi):
    @extend_schema(
        operation_id="guest_invite",
        request=None,
        responses={202: InvitationsQueuedSerializer, 403: FORBIDDEN, 404: NOT_FOUND},
        description="Send the guest's invitation by email, or send it again: every call is a new send.",
        tags=["guests"],
    )
    def post(self, request, event_id, guest_id):
        event = self.event
        guest = self.guest
        queued = notifications.guest_invitations_send(event=event, guests=[guest], acting_user=acting_user(request))
        return Response(InvitationsQueuedSerializer(queued).data, status=status.HTTP_202_ACCEPTED)


class InvitationsSendApi(OrganizerEventApi):
    class InputSerializer(StrictSerializer):
        guests = serializers.ListField(
            child=serializers.UUIDField(),
            min_length=1,
            max_length=1000,
            required=False,
            help_text="Guest ids of this event; each call is a new send",
        )
        not_yet_invited = serializers.BooleanField(
            required=False,
            help_text="Everyone with an email not invited yet; calling it twice sends once",
        )

        def validate(self, attrs):
            if bool(attrs.get("guests")) == bool(attrs.get("not_yet_invited")):
                raise serializers.ValidationError(_("Choose guests or not_yet_invited, not both."))
            return attrs

    @extend_schema(
        operation_id="invitations_send",
        request=InputSerializer,
        responses={202: InvitationsQueuedSerializer, 400: BAD_REQUEST, 403: FORBIDDEN, 404: NOT_FOUND},
        description=(
            'Send invitations to a selection ({"guests": [ids]}) or to everyone not yet invited '
            '({"not_yet_invited": true}). Guests without email are skipped and counted.'
        ),
        tags=["guests"],
    )
    def post(self, request, event_id):
        event = self.event
        data = self.InputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        if data.validated_data.get("not_yet_invited"):
            guests = list(notifications.guests_not_yet_invited(event=event))
            first_only = True
        else:
            ids = set(data.validated_data["guests"])
            guests = selectors.guests_of_event(event=event, guest_ids=ids)
            if len(guests) != len(ids):
                raise exceptions.ValidationError({"guests": [_("Choose guests of this event.")]})
            first_only = False
        queued = notifications.guest_invitations_send(
            event=event, guests=guests, acting_user=acting_user(request), first_only=first_only
        )
        return Response(InvitationsQueuedSerializer(queued).data, status=status.HTTP_202_ACCEPTED)


# --- Reports on an event's guests (paths under events/<id>/) ----------------------------------------


class DietaryGuestSerializer(serializers.Serializer):
    id = serializers.UUIDField(source="pk")
    first_name = serializers.CharField()
    last_name = serializers.CharField()
    num_guests = serializers.IntegerField()
    group_id = serializers.UUIDField(allow_null=True)


class EventStatsApi(OrganizerEventApi):
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
        event = self.event
        return Response(self.OutputSerializer(event_stats(event=event)).data)


class EventDietaryApi(OrganizerEventApi):
    class OutputSerializer(serializers.Serializer):
        dietary = serializers.CharField()
        persons = serializers.IntegerField(help_text="Coming persons (members of a household) who gave this need")
        with_others = serializers.IntegerField(
            help_text="People without their own code those persons bring (small children), who may share it"
        )
        guests = DietaryGuestSerializer(many=True)

    @extend_schema(
        operation_id="event_dietary_report",
        responses={200: OutputSerializer(many=True), 404: NOT_FOUND},
        description=(
            "Coming guests' dietary needs, per person, grouped by the text given (case-insensitive), "
            "most persons first."
        ),
        tags=["events"],
    )
    def get(self, request, event_id):
        event = self.event
        return Response(self.OutputSerializer(dietary_report(event=event), many=True).data)


class QuestionAnswerCountSerializer(serializers.Serializer):
    answer = serializers.CharField()
    count = serializers.IntegerField(help_text="Coming persons who gave this answer")


class EventQuestionReportApi(OrganizerEventApi):
    class OutputSerializer(serializers.Serializer):
        key = serializers.CharField()
        label = serializers.CharField()  # type: ignore[assignment]  # a field named "label", not Field.label
        has_choices = serializers.BooleanField()
        answers = QuestionAnswerCountSerializer(
            many=True,
            help_text="Every choice in the event's order (0 included), "
            "or free-text answers grouped regardless of case, most given first",
        )
        answered = serializers.IntegerField(help_text="Coming persons who answered this question")
        unanswered = serializers.IntegerField(help_text="Coming persons who did not")

    @extend_schema(
        operation_id="event_question_report",
        responses={200: OutputSerializer(many=True), 404: NOT_FOUND},
        description="Per custom question, how many coming persons gave each answer (e.g. 3 Vegetarian, 1 Fish).",
        tags=["events"],
    )
    def get(self, request, event_id):
        event = self.event
        return Response(self.OutputSerializer(question_report(event=event), many=True).data)


class EventActivityApi(FilteredListApi, OrganizerEventApi):
    pagination_class = Pagination
    filterset_class = GuestActivityFilterSet

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
        responses={
            200: OutputSerializer(many=True),
            400: BAD_REQUEST,
            404: OpenApiResponse(description="No such event in your organizations, or no such page"),
        },
        tags=["events"],
    )
    def get(self, request, event_id):
        event = self.event
        filters = self.valid_filters().values()
        guests = guest_activity(event=event, sort=filters["sort"], never_opened_only=filters["never_opened"])
        return paginated_response(queryset=guests, serializer_class=self.OutputSerializer, request=request, view=self)
