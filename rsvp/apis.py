"""The RSVP API: the guest logs in with code + last name, reads and answers the invitation, asks for a
change after the deadline; organizers record answers for a guest's household and decide change requests."""

import uuid

from django.core.exceptions import ValidationError as DjangoValidationError
from django.utils.translation import gettext as _
from drf_spectacular.utils import (
    OpenApiExample,
    OpenApiResponse,
    PolymorphicProxySerializer,
    extend_schema,
    inline_serializer,
)
from rest_framework import exceptions, serializers, status
from rest_framework.permissions import AllowAny
from rest_framework.response import Response
from rest_framework.views import APIView

from events.permissions import OrganizerEventApi
from eventsaas.api import (
    BAD_REQUEST,
    ERROR,
    FORBIDDEN,
    NOT_FOUND,
    FilteredListApi,
    Pagination,
    StrictSerializer,
    acting_user,
    paginated_response,
)
from guests.activity import track_activity
from guests.models import Guest, GuestActivity
from guests.permissions import OrganizerGuestApi
from rsvp import household_cache, selectors, services
from rsvp.filters import ChangeRequestFilterSet
from rsvp.models import ChangeRequest
from rsvp.throttling import RETRY_AFTER_SECONDS, guest_login_is_throttled
from tenants.permissions import IsGuest
from tenants.tokens import code_fingerprint, guest_access_token, guest_token_lifetime

# --- what is read ----------------------------------------------------------------------------------


class MemberSerializer(serializers.Serializer):
    id = serializers.UUIDField()
    first_name = serializers.CharField()
    last_name = serializers.CharField()
    status = serializers.ChoiceField(choices=Guest.Status.choices)
    num_guests = serializers.IntegerField(help_text="People this member counts: themselves and anyone without a code")
    expected_guests = serializers.IntegerField(help_text="People the invitation counts for this member")
    answered_by = serializers.ChoiceField(
        source="answered_by_kind",
        choices=Guest.AnsweredBy.choices,
        allow_blank=True,
        help_text="Who gave the answer: `self`, `household` (another member) or `organizer`; empty while pending",
    )
    answered_by_guest_id = serializers.UUIDField(allow_null=True, help_text="The member who answered, if one did")
    rsvp_at = serializers.DateTimeField(allow_null=True)
    dietary = serializers.CharField()
    answers = serializers.DictField(child=serializers.CharField())


class GuestSelfSerializer(MemberSerializer):
    pass


class QuestionSerializer(serializers.Serializer):
    key = serializers.CharField()
    label = serializers.CharField()  # type: ignore[assignment]  # a field named "label", not Field.label
    choices = serializers.ListField(child=serializers.CharField())


class PublicEventSerializer(serializers.Serializer):
    id = serializers.UUIDField()
    name = serializers.CharField()
    description = serializers.CharField()
    starts_at = serializers.DateTimeField()
    ends_at = serializers.DateTimeField(allow_null=True)
    timezone = serializers.CharField()
    location = serializers.CharField()
    dress_code = serializers.CharField()
    rsvp_deadline = serializers.DateTimeField(allow_null=True)
    language = serializers.CharField()
    contact_email = serializers.EmailField(allow_blank=True)
    questions = QuestionSerializer(many=True)


class ChangeRequestSerializer(serializers.Serializer):
    id = serializers.UUIDField()
    status = serializers.ChoiceField(choices=ChangeRequest.Status.choices)
    proposed = serializers.DictField(help_text="The answer asked for, in the body shape it was sent")
    message = serializers.CharField()
    created_at = serializers.DateTimeField()
    decided_at = serializers.DateTimeField(allow_null=True)
    response = serializers.CharField(help_text="The organizer's note with the decision")


class InvitationSerializer(serializers.Serializer):
    guest = GuestSelfSerializer()
    members = MemberSerializer(many=True, help_text="The other members of the household, each with their own answer")
    expected_total = serializers.IntegerField(help_text="People the invitation counts for the whole household")
    head_count = serializers.IntegerField(help_text="People coming: the sum of every member's num_guests")
    event = PublicEventSerializer()
    rsvp_open = serializers.BooleanField()
    rsvp_state = serializers.ChoiceField(
        choices=["open", "not_open_yet", "closed"],
        help_text="`not_open_yet`: the event is not published; `closed`: the deadline has passed "
        "(ask for a change with POST /api/v1/rsvp/change-request)",
    )
    change_request = ChangeRequestSerializer(allow_null=True, help_text="The guest's latest change request")


# The guest API's hottest read answers with plain dicts: building InvitationSerializer's ~60 fields
# (deep copies of every declared field) cost more than the queries. The serializer stays the schema;
# tests/api/test_rsvp_representation.py checks these dicts equal its output, field for field.
_DATETIME = serializers.DateTimeField()  # DRF's own ISO 8601 in the current time zone ("Z" for UTC)


def _datetime(value) -> str | None:
    return None if value is None else _DATETIME.to_representation(value)


def _member_data(member: Guest) -> dict:
    return {
        "id": str(member.pk),
        "first_name": member.first_name,
        "last_name": member.last_name,
        "status": member.status,
        "num_guests": member.num_guests,
        "expected_guests": member.expected_guests,
        "answered_by": member.answered_by_kind,
        "answered_by_guest_id": str(member.answered_by_guest_id) if member.answered_by_guest_id else None,
        "rsvp_at": _datetime(member.rsvp_at),
        "dietary": member.dietary,
        "answers": {str(key): str(value) for key, value in member.answers.items()},
    }


def _event_data(event) -> dict:
    return {
        "id": str(event.pk),
        "name": event.name,
        "description": event.description,
        "starts_at": _datetime(event.starts_at),
        "ends_at": _datetime(event.ends_at),
        "timezone": event.timezone,
        "location": event.location,
        "dress_code": event.dress_code,
        "rsvp_deadline": _datetime(event.rsvp_deadline),
        "language": event.language,
        "contact_email": event.contact_email,
        "questions": [
            {"key": q["key"], "label": q["label"], "choices": [str(c) for c in q.get("choices", [])]}
            for q in event.questions
        ],
    }


def _change_request_data(change: ChangeRequest | None) -> dict | None:
    if change is None:
        return None
    return {
        "id": str(change.pk),
        "status": change.status,
        "proposed": {str(key): value for key, value in change.proposed.items()},
        "message": change.message,
        "created_at": _datetime(change.created_at),
        "decided_at": _datetime(change.decided_at),
        "response": change.response,
    }


def invitation_data(household: services.Household) -> dict:
    """The guest's invitation as GET /api/v1/rsvp answers it (InvitationSerializer's shape)."""
    guest, event = household.guest, household.guest.event
    return {
        "guest": _member_data(guest),
        "members": [_member_data(member) for member in household.members],
        "expected_total": household.expected_total,
        "head_count": household.head_count,
        "event": _event_data(event),
        "rsvp_open": event.is_rsvp_open(),
        "rsvp_state": event.rsvp_state(),
        "change_request": _change_request_data(selectors.change_request_latest(guest=guest)),
    }


# --- what is answered: two shapes of one body ------------------------------------------------------

ANSWERS_FIELD = serializers.DictField(
    child=serializers.CharField(allow_blank=True, max_length=500),
    required=False,
    help_text="Answers to the event's questions by key (`event.questions`); omitted: unchanged",
)


class SingleNumberAnswerSerializer(StrictSerializer):
    """One number for the household (the original body)."""

    attending = serializers.BooleanField(help_text="false declines for the person answering only")
    num_guests = serializers.IntegerField(
        min_value=0, max_value=50, required=False, default=0, help_text="People coming in the household, you included"
    )
    absent = serializers.ListField(
        child=serializers.UUIDField(),
        required=False,
        default=list,
        max_length=50,
        help_text="Members of the household who are not coming",
    )
    confirmed = serializers.BooleanField(required=False, default=False)
    dietary = serializers.CharField(
        required=False, allow_blank=True, max_length=1000, help_text="Your own dietary needs; omitted: unchanged"
    )
    answers = ANSWERS_FIELD


class MemberAnswerSerializer(StrictSerializer):
    id = serializers.UUIDField(help_text="A member of the household: the guest or another member")
    attending = serializers.BooleanField()
    num_guests = serializers.IntegerField(
        min_value=0,
        max_value=50,
        required=False,
        help_text="People this member counts (at least 1 if attending, 0 if not); omitted: their usual number",
    )
    dietary = serializers.CharField(
        required=False, allow_blank=True, max_length=1000, help_text="This member's dietary needs; omitted: unchanged"
    )
    answers = ANSWERS_FIELD


class PerMemberAnswerSerializer(StrictSerializer):
    """A choice per member; members not listed keep their answer."""

    members = serializers.ListField(child=MemberAnswerSerializer(), min_length=1, max_length=100)
    confirmed = serializers.BooleanField(required=False, default=False)


RSVP_ANSWER = PolymorphicProxySerializer(
    component_name="RsvpAnswer",
    serializers=[SingleNumberAnswerSerializer, PerMemberAnswerSerializer],
    resource_type_field_name=None,
)
RSVP_ANSWER_EXAMPLES = [
    OpenApiExample(
        "The whole household",
        value={"attending": True, "num_guests": 2, "answers": {"meal": "Fish"}},
        request_only=True,
    ),
    OpenApiExample(
        "Fewer one member absent",
        summary="Fewer: one member is not coming",
        value={
            "attending": True,
            "num_guests": 1,
            "absent": ["3f1c2b1e-8a39-4d55-9a55-0f6d2b9c1a11"],
            "confirmed": True,
        },
        request_only=True,
    ),
    OpenApiExample(
        "Decline", summary="Declining (only the person answering)", value={"attending": False}, request_only=True
    ),
    OpenApiExample(
        "A choice per member",
        value={
            "members": [
                {"id": "9b2f7c1a-33a4-4f4e-8f0e-2d7c5e7a9b10", "attending": True, "num_guests": 2, "dietary": "vegan"},
                {"id": "3f1c2b1e-8a39-4d55-9a55-0f6d2b9c1a11", "attending": False},
            ],
            "confirmed": True,
        },
        request_only=True,
    ),
]


def household_answer_from(data) -> services.HouseholdAnswer:
    """Validate either shape of the body (400 naming the fields) and turn it into the services' answer."""
    if not isinstance(data, dict):
        raise exceptions.ValidationError({"non_field_errors": [_("Send a JSON object.")]})
    shape = PerMemberAnswerSerializer if "members" in data else SingleNumberAnswerSerializer
    serializer = shape(data=data)
    serializer.is_valid(raise_exception=True)
    value = serializer.validated_data
    if shape is PerMemberAnswerSerializer:
        members = tuple(
            services.MemberChoice(
                guest_id=m["id"],
                attending=m["attending"],
                num_guests=m.get("num_guests"),
                dietary=m.get("dietary"),
                answers=m.get("answers"),
            )
            for m in value["members"]
        )
        return services.HouseholdAnswer(members=members, confirmed=value["confirmed"])
    return services.HouseholdAnswer(
        attending=value["attending"],
        num_guests=value["num_guests"],
        absent=tuple(value["absent"]),
        dietary=value.get("dietary"),
        answers=value.get("answers"),
        confirmed=value["confirmed"],
    )


NEEDS_CONFIRMATION = OpenApiResponse(
    inline_serializer(
        "NeedsConfirmation",
        {
            "code": serializers.CharField(help_text="`needs_confirmation`, or `answer_changed` (see description)"),
            "reason": serializers.ChoiceField(
                ["fewer_than_expected", "more_than_expected", "overrides_decline"], required=False
            ),
            "reasons": serializers.ListField(child=serializers.CharField(), required=False),
            "expected": serializers.IntegerField(required=False),
            "answered": serializers.IntegerField(required=False),
            "confirmable": serializers.BooleanField(
                required=False,
                help_text="false: confirming is not enough, name who is not coming (`absent` or `members`)",
            ),
            "members": MemberSerializer(many=True, required=False, help_text="The other members of the household"),
            "concerned": MemberSerializer(many=True, required=False, help_text="Members whose number is in question"),
            "declined_members": MemberSerializer(
                many=True, required=False, help_text="Members whose own decline this answer would change"
            ),
            "detail": serializers.CharField(required=False),
        },
    ),
    description=(
        "`needs_confirmation`: nothing was saved; ask, then send the same answer with `confirmed` (when "
        "`confirmable`), naming who is not coming if needed. `answer_changed`: someone in the household "
        "answered at the same moment; nothing of this answer was saved: read and answer again"
    ),
)


def needs_confirmation_response(needed: services.RsvpNeedsConfirmation) -> Response:
    return Response(
        {
            "code": "needs_confirmation",
            "reason": needed.reason,
            "reasons": needed.reasons,
            "expected": needed.expected,
            "answered": needed.answered,
            "confirmable": needed.confirmable,
            "members": MemberSerializer(needed.members, many=True).data,
            "concerned": MemberSerializer(needed.concerned, many=True).data,
            "declined_members": MemberSerializer(needed.declined_members, many=True).data,
        },
        status=status.HTTP_409_CONFLICT,
    )


def answer_changed_response() -> Response:
    return Response(
        {
            "code": "answer_changed",
            "detail": _(
                "Someone in your household answered at the same moment. Check the answers and send yours again."
            ),
        },
        status=status.HTTP_409_CONFLICT,
    )


def rsvp_closed_response(guest: Guest) -> Response:
    return Response(
        {
            "code": "rsvp_closed",
            "detail": _("The RSVP deadline has passed. To change your answer, please contact the organizer."),
            "contact_email": guest.event.contact_email,
        },
        status=status.HTTP_403_FORBIDDEN,
    )


def rsvp_not_open_response() -> Response:
    return Response(
        {
            "code": "rsvp_not_open",
            "detail": _("Answers are not open yet. Please come back when the event is published."),
        },
        status=status.HTTP_403_FORBIDDEN,
    )


# --- the guest -------------------------------------------------------------------------------------


class GuestLoginApi(APIView):
    authentication_classes: list = []
    permission_classes = [AllowAny]

    class InputSerializer(StrictSerializer):
        code = serializers.CharField(max_length=64)  # long imported codes: guests.codes.stored_code
        last_name = serializers.CharField(max_length=100)

    class OutputSerializer(serializers.Serializer):
        access = serializers.CharField()
        token_type = serializers.CharField()
        expires_in = serializers.IntegerField()
        guest = GuestSelfSerializer()

    @extend_schema(
        operation_id="guest_login",
        request=InputSerializer,
        responses={
            200: OutputSerializer,
            400: BAD_REQUEST,
            401: OpenApiResponse(ERROR, description="Unknown code or wrong last name (the same answer for both)"),
            429: OpenApiResponse(ERROR, description="Too many attempts from this client or for this code"),
        },
        tags=["guest"],
    )
    def post(self, request):
        raw_code = request.data.get("code", "") if isinstance(request.data, dict) else ""
        if guest_login_is_throttled(request._request, raw_code if isinstance(raw_code, str) else ""):
            return Response(
                {"code": "throttled", "detail": _("Too many attempts. Please wait a few minutes and try again.")},
                status=status.HTTP_429_TOO_MANY_REQUESTS,
                headers={"Retry-After": str(RETRY_AFTER_SECONDS)},
            )
        data = self.InputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        guest = services.guest_authenticate(**data.validated_data)
        if guest is None:
            return Response(
                {
                    "code": "invalid_credentials",
                    "detail": _("We could not find an invitation with this code and last name."),
                },
                status=status.HTTP_401_UNAUTHORIZED,
                headers={"WWW-Authenticate": 'Bearer realm="api"'},
            )
        track_activity(guest=guest, kind=GuestActivity.Kind.LOGIN, request=request)
        output = {
            "access": guest_access_token(guest),
            "token_type": "Bearer",
            "expires_in": int(guest_token_lifetime().total_seconds()),
            "guest": guest,
        }
        return Response(self.OutputSerializer(output).data)


def _token_no_longer_valid() -> exceptions.AuthenticationFailed:
    return exceptions.AuthenticationFailed(_("This token is no longer valid; log in again."))


def _check_token_guest(guest: Guest | None, claims) -> Guest:
    """A regenerated code or an archived event ends the token."""
    if guest is None or guest.event.is_archived or code_fingerprint(guest.code) != claims.get("code_fp"):
        raise _token_no_longer_valid()
    return guest


def guest_from_token(request) -> Guest:
    """The guest named by the token, scoped by its tenant and event; a regenerated code ends the token."""
    claims = request.auth
    guest = (
        Guest.objects.select_related("event", "tenant")
        .filter(pk=claims["sub"], tenant_id=claims.get("tenant_id"), event_id=claims.get("event_id"))
        .first()
    )
    return _check_token_guest(guest, claims)


def household_from_token(request) -> services.Household:
    """guest_from_token and the guest's household, read together (one query while the token's group is current)."""
    claims = request.auth
    try:
        household = household_cache.household_with_hint(
            tenant_id=uuid.UUID(claims.get("tenant_id")),
            event_id=uuid.UUID(claims.get("event_id")),
            guest_id=uuid.UUID(claims["sub"]),
            group_hint=uuid.UUID(claims["group_id"]) if claims.get("group_id") else None,
        )
    except (TypeError, ValueError, AttributeError) as exc:  # a token of ours always has them; not worth a 500
        raise _token_no_longer_valid() from exc
    if household is None:
        raise _token_no_longer_valid()
    _check_token_guest(household.guest, claims)
    return household


class RsvpApi(APIView):
    permission_classes = [IsGuest]

    @extend_schema(operation_id="rsvp_read", responses={200: InvitationSerializer}, tags=["guest"])
    def get(self, request):
        household = household_from_token(request)
        track_activity(guest=household.guest, kind=GuestActivity.Kind.API_CALL, request=request)
        return Response(invitation_data(household))

    @extend_schema(
        operation_id="rsvp_answer",
        request=RSVP_ANSWER,
        examples=RSVP_ANSWER_EXAMPLES,
        responses={
            200: InvitationSerializer,
            400: BAD_REQUEST,
            403: OpenApiResponse(
                ERROR, description="`rsvp_closed`: the deadline has passed; `rsvp_not_open`: not published yet"
            ),
            409: NEEDS_CONFIRMATION,
        },
        description=(
            "Answer for the household, in one of two shapes: one number (`attending`, `num_guests`, `absent`) "
            "or a choice per member (`members`). Fewer than expected with nobody named absent and nobody's "
            "count lowered is never saved (409, `confirmable: false`). docs/api.md has the rules."
        ),
        tags=["guest"],
    )
    def put(self, request):
        guest = guest_from_token(request)
        track_activity(guest=guest, kind=GuestActivity.Kind.API_CALL, request=request)
        answer = household_answer_from(request.data)
        try:
            services.rsvp_submit(guest=guest, answer=answer)
        except services.RsvpNotOpen:
            return rsvp_not_open_response()
        except services.RsvpClosed:
            return rsvp_closed_response(guest)
        except services.RsvpNeedsConfirmation as needed:
            return needs_confirmation_response(needed)
        except services.RsvpConflict:
            return answer_changed_response()
        track_activity(guest=guest, kind=GuestActivity.Kind.RSVP_SUBMITTED, request=request)
        return Response(invitation_data(services.household_for(guest=guest)))


class RsvpChangeRequestApi(APIView):
    permission_classes = [IsGuest]

    class InputSerializer(StrictSerializer):
        answer = serializers.JSONField(help_text="The answer asked for: a body of PUT /api/v1/rsvp (either shape)")
        message = serializers.CharField(
            required=False, allow_blank=True, max_length=ChangeRequest.MESSAGE_MAX_LENGTH, default=""
        )

    @extend_schema(
        operation_id="rsvp_change_request",
        request=inline_serializer(
            "RsvpChangeRequestInput",
            {
                "answer": RSVP_ANSWER,
                "message": serializers.CharField(
                    required=False, allow_blank=True, max_length=ChangeRequest.MESSAGE_MAX_LENGTH
                ),
            },
        ),
        examples=[
            OpenApiExample(
                "After the deadline",
                value={"answer": {"attending": False}, "message": "Sorry, I am ill."},
                request_only=True,
            )
        ],
        responses={
            201: ChangeRequestSerializer,
            400: BAD_REQUEST,
            409: OpenApiResponse(
                ERROR, description="`rsvp_open`: answers are open (or not open yet): answer with PUT /api/v1/rsvp"
            ),
        },
        description=(
            "After the deadline: ask the organizer to change your answer. One request is open at a time; "
            "asking again replaces it. The organizer approves (the answer is applied) or declines; you get an email."
        ),
        tags=["guest"],
    )
    def post(self, request):
        guest = guest_from_token(request)
        track_activity(guest=guest, kind=GuestActivity.Kind.API_CALL, request=request)
        data = self.InputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        try:
            answer = household_answer_from(data.validated_data["answer"])
        except exceptions.ValidationError as error:
            raise exceptions.ValidationError({"answer": error.detail}) from None
        try:
            change = services.change_request_create(guest=guest, answer=answer, message=data.validated_data["message"])
        except services.ChangeRequestNotNeeded:
            return Response(
                {"code": "rsvp_open", "detail": _("Answers are open: change your answer directly.")}
                if guest.event.is_rsvp_open()
                else {"code": "rsvp_not_open", "detail": _("Answers are not open yet.")},
                status=status.HTTP_409_CONFLICT,
            )
        except services.RsvpNeedsConfirmation:
            # Confirmed by the request itself; what remains is "fewer, and nobody named".
            raise exceptions.ValidationError(
                {"answer": [_("Say who is not coming: the number is smaller than your household.")]}
            ) from None
        except DjangoValidationError as error:
            detail = error.message_dict if hasattr(error, "error_dict") else {"non_field_errors": error.messages}
            raise exceptions.ValidationError({"answer": detail}) from None
        except services.RsvpConflict:
            return answer_changed_response()
        return Response(ChangeRequestSerializer(change).data, status=status.HTTP_201_CREATED)


# --- the organizer ----------------------------------------------------------------------------------


class OrganizerHouseholdSerializer(serializers.Serializer):
    guest = MemberSerializer()
    members = MemberSerializer(many=True)
    expected_total = serializers.IntegerField()
    head_count = serializers.IntegerField(help_text="The sum of every member's num_guests")


def household_data(household: services.Household) -> dict:
    return OrganizerHouseholdSerializer(
        {
            "guest": household.guest,
            "members": household.members,
            "expected_total": household.expected_total,
            "head_count": household.head_count,
        }
    ).data


class GuestRsvpRecordApi(OrganizerGuestApi):
    @extend_schema(
        operation_id="guest_rsvp_record",
        request=RSVP_ANSWER,
        examples=RSVP_ANSWER_EXAMPLES,
        responses={
            200: OrganizerHouseholdSerializer,
            400: BAD_REQUEST,
            403: FORBIDDEN,
            404: NOT_FOUND,
            409: NEEDS_CONFIRMATION,
        },
        description=(
            "Record an answer for the guest's household (a phone call, a late change): the same bodies and "
            "rules as PUT /api/v1/rsvp, answering as this guest, also after the deadline. Audit-logged with "
            "your account. Owners and admins only; an archived event's answers do not change (400)."
        ),
        tags=["guests"],
    )
    def put(self, request, event_id, guest_id):
        event = self.event
        guest = self.guest
        guest.event = event
        answer = household_answer_from(request.data)
        try:
            household = services.rsvp_record(guest=guest, answer=answer, acting_user=acting_user(request))
        except services.RsvpNeedsConfirmation as needed:
            return needs_confirmation_response(needed)
        except services.RsvpConflict:
            return answer_changed_response()
        return Response(household_data(household))


class OrganizerChangeRequestSerializer(ChangeRequestSerializer):
    guest = MemberSerializer()
    decided_by_user_id = serializers.UUIDField(allow_null=True)


class EventChangeRequestsApi(FilteredListApi, OrganizerEventApi):
    pagination_class = Pagination
    filterset_class = ChangeRequestFilterSet

    @extend_schema(
        operation_id="change_request_list",
        responses={200: OrganizerChangeRequestSerializer(many=True), 400: BAD_REQUEST, 404: NOT_FOUND},
        description="Guests' requests to change their answer after the deadline.",
        tags=["guests"],
    )
    def get(self, request, event_id):
        event = self.event
        requests = selectors.change_request_list(event=event, status=self.valid_filters().values()["status"])
        return paginated_response(
            queryset=requests, serializer_class=OrganizerChangeRequestSerializer, request=request, view=self
        )


class DecisionInputSerializer(StrictSerializer):
    response = serializers.CharField(
        required=False,
        allow_blank=True,
        max_length=ChangeRequest.MESSAGE_MAX_LENGTH,
        default="",
        help_text="A note for the guest, sent with the decision",
    )


ALREADY_DECIDED = OpenApiResponse(ERROR, description="`already_decided`: the request was approved or declined before")


class ChangeRequestApproveApi(OrganizerEventApi):
    @extend_schema(
        operation_id="change_request_approve",
        request=DecisionInputSerializer,
        responses={
            200: OrganizerChangeRequestSerializer,
            400: BAD_REQUEST,
            403: FORBIDDEN,
            404: NOT_FOUND,
            409: ALREADY_DECIDED,
        },
        description=(
            "Apply the proposed answer (as a recorded answer, audit-logged) and email the guest. "
            "400 when it no longer fits the household; the request then stays pending."
        ),
        tags=["guests"],
    )
    def post(self, request, event_id, change_request_id):
        event = self.event
        change = selectors.change_request_get(event=event, request_id=change_request_id)
        data = DecisionInputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        try:
            services.change_request_approve(
                request=change, acting_user=acting_user(request), response=data.validated_data["response"]
            )
        except services.ChangeRequestAlreadyDecided:
            return already_decided_response()
        except (services.RsvpNeedsConfirmation, services.RsvpConflict):
            raise exceptions.ValidationError(
                {"non_field_errors": [_("The household changed: this answer no longer fits it.")]}
            ) from None
        except DjangoValidationError as error:
            raise exceptions.ValidationError({"non_field_errors": error.messages}) from None
        change.refresh_from_db()
        return Response(OrganizerChangeRequestSerializer(change).data)


class ChangeRequestDeclineApi(OrganizerEventApi):
    @extend_schema(
        operation_id="change_request_decline",
        request=DecisionInputSerializer,
        responses={
            200: OrganizerChangeRequestSerializer,
            400: BAD_REQUEST,
            403: FORBIDDEN,
            404: NOT_FOUND,
            409: ALREADY_DECIDED,
        },
        description="Keep the answer as it is and email the guest (with your note).",
        tags=["guests"],
    )
    def post(self, request, event_id, change_request_id):
        event = self.event
        change = selectors.change_request_get(event=event, request_id=change_request_id)
        data = DecisionInputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        try:
            services.change_request_decline(
                request=change, acting_user=acting_user(request), response=data.validated_data["response"]
            )
        except services.ChangeRequestAlreadyDecided:
            return already_decided_response()
        return Response(OrganizerChangeRequestSerializer(change).data)


def already_decided_response() -> Response:
    return Response(
        {"code": "already_decided", "detail": _("This request was already decided.")},
        status=status.HTTP_409_CONFLICT,
    )
