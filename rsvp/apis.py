"""The guest's API: log in with code + last name, read and answer the invitation."""

from django.utils.translation import gettext as _
from drf_spectacular.utils import OpenApiResponse, extend_schema, inline_serializer
from rest_framework import exceptions, serializers, status
from rest_framework.permissions import AllowAny
from rest_framework.response import Response
from rest_framework.views import APIView

from eventsaas.api import BAD_REQUEST, ERROR, StrictSerializer
from guests.activity import track_activity
from guests.models import Guest, GuestActivity
from rsvp import services
from rsvp.throttling import RETRY_AFTER_SECONDS, guest_login_is_throttled
from tenants.permissions import IsGuest
from tenants.tokens import code_fingerprint, guest_access_token, guest_token_lifetime


class MemberSerializer(serializers.Serializer):
    id = serializers.UUIDField()
    first_name = serializers.CharField()
    last_name = serializers.CharField()
    status = serializers.ChoiceField(choices=Guest.Status.choices)
    num_guests = serializers.IntegerField()
    expected_guests = serializers.IntegerField()


class GuestSelfSerializer(MemberSerializer):
    dietary = serializers.CharField()
    answers = serializers.DictField(child=serializers.CharField())
    rsvp_at = serializers.DateTimeField(allow_null=True)


class QuestionSerializer(serializers.Serializer):
    key = serializers.CharField()
    label = serializers.CharField()
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


class InvitationSerializer(serializers.Serializer):
    guest = GuestSelfSerializer()
    members = MemberSerializer(many=True)
    expected_total = serializers.IntegerField()
    event = PublicEventSerializer()
    rsvp_open = serializers.BooleanField()


def invitation_data(guest: Guest) -> dict:
    household = services.household_for(guest=guest)
    return InvitationSerializer(
        {
            "guest": guest,
            "members": household.members,
            "expected_total": household.expected_total,
            "event": guest.event,
            "rsvp_open": guest.event.is_rsvp_open(),
        }
    ).data


class GuestLoginApi(APIView):
    authentication_classes: list = []
    permission_classes = [AllowAny]

    class InputSerializer(StrictSerializer):
        code = serializers.CharField(max_length=32)
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


def guest_from_token(request) -> Guest:
    """The guest named by the token, scoped by its tenant and event; a regenerated code ends the token."""
    claims = request.auth
    guest = (
        Guest.objects.select_related("event", "tenant")
        .filter(pk=claims["sub"], tenant_id=claims.get("tenant_id"), event_id=claims.get("event_id"))
        .first()
    )
    if guest is None or guest.event.is_archived or code_fingerprint(guest.code) != claims.get("code_fp"):
        raise exceptions.AuthenticationFailed("This token is no longer valid; log in again.")
    return guest


class RsvpApi(APIView):
    permission_classes = [IsGuest]

    class InputSerializer(StrictSerializer):
        attending = serializers.BooleanField()
        num_guests = serializers.IntegerField(min_value=0, max_value=50, required=False, default=0)
        absent = serializers.ListField(child=serializers.UUIDField(), required=False, default=list, max_length=50)
        confirmed = serializers.BooleanField(required=False, default=False)
        dietary = serializers.CharField(required=False, allow_blank=True, max_length=1000, default="")
        answers = serializers.DictField(
            child=serializers.CharField(allow_blank=True, max_length=500), required=False, default=dict
        )

    @extend_schema(operation_id="rsvp_read", responses={200: InvitationSerializer}, tags=["guest"])
    def get(self, request):
        guest = guest_from_token(request)
        track_activity(guest=guest, kind=GuestActivity.Kind.API_CALL, request=request)
        return Response(invitation_data(guest))

    @extend_schema(
        operation_id="rsvp_answer",
        request=InputSerializer,
        responses={
            200: InvitationSerializer,
            400: BAD_REQUEST,
            403: OpenApiResponse(ERROR, description="`rsvp_closed`: the deadline has passed"),
            409: OpenApiResponse(
                inline_serializer(
                    "NeedsConfirmation",
                    {
                        "code": serializers.CharField(),
                        "reason": serializers.ChoiceField(["fewer_than_expected", "more_than_expected"]),
                        "expected": serializers.IntegerField(),
                        "answered": serializers.IntegerField(),
                        "members": MemberSerializer(many=True),
                    },
                ),
                description="The number does not match the household: send again with `confirmed` (and `absent`)",
            ),
        },
        tags=["guest"],
    )
    def put(self, request):
        guest = guest_from_token(request)
        track_activity(guest=guest, kind=GuestActivity.Kind.API_CALL, request=request)
        data = self.InputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        answer = data.validated_data
        try:
            services.rsvp_submit(
                guest=guest,
                attending=answer["attending"],
                num_guests=answer["num_guests"],
                absent_member_ids=answer["absent"],
                confirmed=answer["confirmed"],
                dietary=answer["dietary"],
                answers=answer["answers"],
            )
        except services.RsvpClosed:
            return Response(
                {
                    "code": "rsvp_closed",
                    "detail": _("The RSVP deadline has passed. To change your answer, please contact the organizer."),
                    "contact_email": guest.event.contact_email,
                },
                status=status.HTTP_403_FORBIDDEN,
            )
        except services.RsvpNeedsConfirmation as needed:
            return Response(
                {
                    "code": "needs_confirmation",
                    "reason": needed.reason,
                    "expected": needed.expected,
                    "answered": needed.answered,
                    "members": MemberSerializer(needed.members, many=True).data,
                },
                status=status.HTTP_409_CONFLICT,
            )
        track_activity(guest=guest, kind=GuestActivity.Kind.RSVP_SUBMITTED, request=request)
        guest.refresh_from_db()
        return Response(invitation_data(guest))
