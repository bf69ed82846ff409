"""The ticketing API: the public checkout and waitlist, and the organizer's orders, refunds, check-in, sales
numbers and waitlist."""

from typing import Any

from django.conf import settings
from django.core.exceptions import ValidationError as DjangoValidationError
from django.utils import translation
from django.utils.translation import gettext as _
from drf_spectacular.utils import OpenApiResponse, extend_schema, inline_serializer
from rest_framework import exceptions, serializers, status
from rest_framework.permissions import AllowAny
from rest_framework.response import Response
from rest_framework.views import APIView

from billing import selectors, services
from billing.filters import OrderFilterSet
from billing.models import LedgerEntry, Order, Ticket, WaitlistEntry
from billing.throttling import RETRY_AFTER_SECONDS, checkout_is_throttled
from events.models import TicketType
from events.permissions import OrganizerEventApi, organizer_event
from events.selectors import event_on_sale
from eventsaas.api import (
    BAD_REQUEST,
    ERROR,
    FIELD_ERRORS,
    FORBIDDEN,
    NOT_FOUND,
    FilteredListApi,
    Pagination,
    StrictSerializer,
    acting_user,
    paginated_response,
)
from eventsaas.logs import answered_on_purpose
from tenants.permissions import IsOrganizer

# Largest refund or price Stripe takes, in the currency's minor unit.
MAX_AMOUNT = 99_999_999


def organizer_order(request, order_id, *, write: bool = False) -> Order:
    """An order of one of the token's organizations (another organization's is a 404), role checked.

    The order is looked up among the token's organizations only; its event goes
    through `organizer_event`, which checks the role in that organization.
    """
    order = Order.objects.filter(pk=order_id, tenant_id__in=request.user.tenant_ids).first()
    if order is None:
        raise exceptions.NotFound()
    order.event = organizer_event(request, order.event_id, write=write)
    return order


def _buyer_language(request, event) -> str:
    """The language the client asked for (Accept-Language, as LocaleMiddleware chose it), else the event's."""
    if request.headers.get("Accept-Language"):
        return translation.get_language() or event.language
    return event.language


# --- Serializers ------------------------------------------------------------------------------------


class TicketTypeRefSerializer(serializers.Serializer):
    id = serializers.UUIDField()
    name = serializers.CharField()


class OrderSerializer(serializers.Serializer):
    id = serializers.UUIDField()
    event_id = serializers.UUIDField()
    status = serializers.ChoiceField(choices=Order.Status.choices)
    attention = serializers.ChoiceField(
        choices=Order.Attention.choices, help_text="Why an order needs the organizer (blank when it does not)"
    )
    buyer_name = serializers.CharField()
    buyer_email = serializers.EmailField()
    quantity = serializers.IntegerField(help_text="Tickets ordered")
    total = serializers.IntegerField(help_text="In the currency's minor unit")
    currency = serializers.CharField()
    paid_amount = serializers.IntegerField(help_text="Captured by the payment provider")
    refunded_amount = serializers.IntegerField()
    refundable_amount = serializers.IntegerField()
    application_fee = serializers.IntegerField(
        help_text="The platform's fee on this order, fixed at checkout (0 without a connected account)"
    )
    is_test = serializers.BooleanField(help_text="Paid in the local test-payment mode: no real money")
    created_at = serializers.DateTimeField()
    expires_at = serializers.DateTimeField(help_text="When an unpaid order gives its seats back")
    paid_at = serializers.DateTimeField(allow_null=True)
    closed_at = serializers.DateTimeField(allow_null=True, help_text="When it expired or was cancelled")


class OrderLineSerializer(serializers.Serializer):
    ticket_type = serializers.UUIDField()
    name = serializers.CharField()
    quantity = serializers.IntegerField()
    unit_price = serializers.IntegerField()


class OrderAttendeeSerializer(serializers.Serializer):
    ticket_type = serializers.UUIDField()
    name = serializers.CharField(allow_blank=True)


class TicketSerializer(serializers.Serializer):
    id = serializers.UUIDField()
    order_id = serializers.UUIDField()
    event_id = serializers.UUIDField()
    ticket_type = TicketTypeRefSerializer()
    seat = serializers.IntegerField(help_text="1, 2, ... within the order")
    code = serializers.CharField(
        source="display_code", help_text="As printed; check-in accepts it with or without dashes"
    )
    attendee_name = serializers.CharField(allow_blank=True)
    price = serializers.IntegerField()
    currency = serializers.CharField()
    status = serializers.ChoiceField(choices=Ticket.Status.choices)
    checked_in_at = serializers.DateTimeField(allow_null=True)
    voided_at = serializers.DateTimeField(allow_null=True)


class LedgerEntrySerializer(serializers.Serializer):
    id = serializers.UUIDField()
    kind = serializers.ChoiceField(choices=LedgerEntry.Kind.choices)
    amount = serializers.IntegerField(help_text="Always positive; `kind` says which way the money went")
    fee = serializers.IntegerField(
        help_text="The platform's fee taken with a payment, or the part of it given back with a refund"
    )
    net = serializers.IntegerField(help_text="amount - fee: what the organization received, or what a refund took back")
    currency = serializers.CharField()
    stripe_object_id = serializers.CharField(help_text="The payment or refund at Stripe (test mode: a local id)")
    created_at = serializers.DateTimeField()


class OrderDetailSerializer(OrderSerializer):
    lines = OrderLineSerializer(many=True)
    attendees = OrderAttendeeSerializer(many=True, help_text="One per seat, in seat order")
    dietary = serializers.CharField(allow_blank=True)
    answers = serializers.DictField(child=serializers.CharField(allow_blank=True))
    tickets = TicketSerializer(many=True, source="ticket_list", help_text="Issued once the order is paid")
    ledger = LedgerEntrySerializer(
        many=True, source="ledger_entries", help_text="Payments minus refunds = paid_amount - refunded_amount"
    )


def order_detail_data(order: Order) -> dict:
    # Read by OrderDetailSerializer (its `source`s), not fields of the model:
    order.ticket_list = selectors.order_tickets(order=order)  # type: ignore[attr-defined]
    order.ledger_entries = selectors.order_ledger(order=order)  # type: ignore[attr-defined]
    return OrderDetailSerializer(order).data


# --- The public checkout -----------------------------------------------------------------------------


class SoldOutTicketTypeSerializer(serializers.Serializer):
    id = serializers.UUIDField()
    name = serializers.CharField()
    remaining = serializers.IntegerField(help_text="Seats still free: fewer than asked for, often 0")


SOLD_OUT = inline_serializer(
    "SoldOut",
    {
        "code": serializers.CharField(),
        "detail": serializers.CharField(),
        "ticket_types": SoldOutTicketTypeSerializer(many=True),
    },
)


def _service_errors(exc: DjangoValidationError) -> dict:
    """checkout_start's field errors under the request's own names (`buyer_email` is `buyer.email`)."""
    errors: dict[str, Any] = exc.message_dict if hasattr(exc, "error_dict") else {"non_field_errors": exc.messages}
    buyer = {key.removeprefix("buyer_"): errors.pop(key) for key in ("buyer_name", "buyer_email") if key in errors}
    if buyer:
        errors["buyer"] = buyer
    return errors


class CheckoutItemSerializer(StrictSerializer):
    ticket_type = serializers.UUIDField()
    quantity = serializers.IntegerField(min_value=1, max_value=services.MAX_TICKETS_PER_ORDER)


class CheckoutBuyerSerializer(StrictSerializer):
    name = serializers.CharField(max_length=200)
    email = serializers.EmailField(max_length=254)


class CheckoutAttendeeSerializer(StrictSerializer):
    name = serializers.CharField(max_length=200, allow_blank=True)


def _throttled() -> Response:
    """429 for a client over the checkout rate (checkouts and waitlist joins count together)."""
    return Response(
        {"code": "throttled", "detail": _("Too many attempts. Please wait a minute and try again.")},
        status=status.HTTP_429_TOO_MANY_REQUESTS,
        headers={"Retry-After": str(RETRY_AFTER_SECONDS)},
    )


class CheckoutApi(APIView):
    authentication_classes: list = []
    permission_classes = [AllowAny]

    class InputSerializer(StrictSerializer):
        # many=True makes a ListSerializer, which takes min/max_length (the stubs type the child's __init__).
        items = CheckoutItemSerializer(many=True, min_length=1, max_length=50)  # type: ignore[call-arg]
        buyer = CheckoutBuyerSerializer()
        attendees = CheckoutAttendeeSerializer(  # type: ignore[call-arg]  # ListSerializer's max_length, as above
            many=True,
            required=False,
            max_length=services.MAX_TICKETS_PER_ORDER,
            help_text="One per ticket, in the order of `items`; required when the event asks for names",
        )
        dietary = serializers.CharField(allow_blank=True, max_length=2000, required=False, default="")
        answers = serializers.DictField(
            child=serializers.CharField(allow_blank=True, max_length=500),
            required=False,
            default=dict,
            help_text="The event's custom questions, by key",
        )
        access_code = serializers.CharField(
            allow_blank=True, max_length=40, required=False, default="", help_text="Unlocks hidden ticket types"
        )

    class OutputSerializer(serializers.Serializer):
        order_id = serializers.UUIDField(source="pk")
        status = serializers.CharField(help_text="`pending` (send the buyer to pay) or `paid` (a free registration)")
        checkout_url = serializers.SerializerMethodField(
            help_text="Send the buyer here to pay: Stripe Checkout, or the test page; null for a free registration"
        )
        order_url = serializers.SerializerMethodField(
            help_text="The buyer's order page (their tickets once paid); keep it private"
        )
        expires_at = serializers.DateTimeField(
            help_text="The seats are held until then (pending orders)", allow_null=True
        )
        total = serializers.IntegerField(help_text="In the currency's minor unit")
        currency = serializers.CharField()

        def get_checkout_url(self, order: Order) -> str | None:
            return order.checkout_url or None

        def get_order_url(self, order: Order) -> str:
            return settings.SITE_URL + services.order_page_path(order)

    @extend_schema(
        operation_id="checkout_start",
        request=InputSerializer,
        responses={
            201: OutputSerializer,
            400: BAD_REQUEST,
            404: OpenApiResponse(ERROR, description="No published ticketed event with this id"),
            409: OpenApiResponse(
                SOLD_OUT, description="`sold_out`: not enough seats left of these types; nothing was reserved"
            ),
            429: OpenApiResponse(ERROR, description="`throttled`: too many checkouts from this client"),
            503: OpenApiResponse(
                ERROR,
                description="`payments_unavailable`: payments are not configured or the provider failed; "
                "nothing was reserved or charged",
            ),
        },
        description=(
            "Public, no token. Reserves the seats at once and creates an order awaiting payment; send the buyer "
            "to `checkout_url`. Unpaid orders give their seats back at `expires_at`. An order whose total is 0 "
            "(free tickets) is a registration: it is `paid` at once, in every payment mode, its tickets are "
            "issued and emailed, and `checkout_url` is null."
        ),
        tags=["tickets"],
    )
    def post(self, request, event_id):
        if checkout_is_throttled(request._request):
            return _throttled()
        event = event_on_sale(event_id=event_id)
        data = self.InputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        body = data.validated_data
        checkout = services.CheckoutRequest(
            items=[services.CheckoutItem(str(item["ticket_type"]), item["quantity"]) for item in body["items"]],
            buyer_name=body["buyer"]["name"],
            buyer_email=body["buyer"]["email"],
            attendee_names=[attendee["name"] for attendee in body.get("attendees", [])],
            dietary=body["dietary"],
            answers=body["answers"],
            access_code=body["access_code"],
            language=_buyer_language(request, event),
        )
        try:
            order = services.checkout_start(event=event, request=checkout)
        except services.SoldOut as sold_out:
            return Response(
                {
                    "code": "sold_out",
                    "detail": _("Not enough tickets left: %(names)s") % {"names": str(sold_out)},
                    "ticket_types": _sold_out_types(sold_out.ticket_types),
                },
                status=status.HTTP_409_CONFLICT,
            )
        except services.PaymentsUnavailable as unavailable:
            return answered_on_purpose(
                Response(
                    {"code": "payments_unavailable", "detail": str(unavailable)},
                    status=status.HTTP_503_SERVICE_UNAVAILABLE,
                )
            )
        except DjangoValidationError as invalid:
            raise exceptions.ValidationError(_service_errors(invalid)) from None
        return Response(_checkout_answer(order), status=status.HTTP_201_CREATED)


# Checkout's answers as plain dicts: a serializer copies its fields for every answer (40-100 µs here, against
# 2-3 µs, on every one of a rush's answers). The shapes are those of the serializers above, which document
# them (tests/api/test_billing_api.py holds them equal); the datetime goes through DRF's own field.
_DATETIME = serializers.DateTimeField()


def _sold_out_types(ticket_types: list[TicketType]) -> list[dict[str, Any]]:
    return [{"id": str(t.pk), "name": t.name, "remaining": t.remaining} for t in ticket_types]


def _checkout_answer(order: Order) -> dict[str, Any]:
    return {
        "order_id": str(order.pk),
        "status": str(order.status),
        "checkout_url": order.checkout_url or None,
        "order_url": settings.SITE_URL + services.order_page_path(order),
        "expires_at": _DATETIME.to_representation(order.expires_at),  # None stays None
        "total": order.total,
        "currency": order.currency,
    }


# --- The organizer's orders --------------------------------------------------------------------------


class EventOrdersApi(FilteredListApi, OrganizerEventApi):
    pagination_class = Pagination
    filterset_class = OrderFilterSet

    @extend_schema(
        operation_id="order_list",
        responses={
            200: OrderSerializer(many=True),
            400: BAD_REQUEST,
            404: OpenApiResponse(ERROR, description="No such event in your organizations, or no such page"),
        },
        description="The event's orders, newest first.",
        tags=["orders"],
    )
    def get(self, request, event_id):
        event = self.event
        orders = selectors.order_list(event=event, status=self.valid_filters().values()["status"] or None)
        return paginated_response(queryset=orders, serializer_class=OrderSerializer, request=request, view=self)


class OrderDetailApi(APIView):
    permission_classes = [IsOrganizer]

    @extend_schema(
        operation_id="order_read",
        responses={200: OrderDetailSerializer, 404: NOT_FOUND},
        description="The order with its tickets (codes, check-in) and its ledger (payments and refunds).",
        tags=["orders"],
    )
    def get(self, request, order_id):
        order = organizer_order(request, order_id)
        return Response(order_detail_data(order))


class OrderRefundApi(APIView):
    permission_classes = [IsOrganizer]

    class InputSerializer(StrictSerializer):
        amount = serializers.IntegerField(
            min_value=1,
            max_value=MAX_AMOUNT,
            required=False,
            help_text="In the currency's minor unit; leave it out to refund everything left",
        )

    @extend_schema(
        operation_id="order_refund",
        request=InputSerializer,
        responses={
            200: OrderDetailSerializer,
            400: OpenApiResponse(
                BAD_REQUEST.response,
                description="`amount`: more than is left to refund, nothing left, or the provider refused",
            ),
            403: FORBIDDEN,
            404: NOT_FOUND,
        },
        description=(
            "Refund part or all of what the buyer paid. Tickets are voided, last seat first, as far as the "
            "refunded money covers their price; each voided ticket's seat goes back on sale."
        ),
        tags=["orders"],
    )
    def post(self, request, order_id):
        order = organizer_order(request, order_id, write=True)
        data = self.InputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        order = services.order_refund(
            order=order, acting_user=acting_user(request), amount=data.validated_data.get("amount")
        )
        return Response(order_detail_data(order))


# --- Check-in and sales ------------------------------------------------------------------------------


CHECK_IN_UNKNOWN = inline_serializer(
    "CheckInNotFound",
    {
        "code": serializers.CharField(),
        "detail": serializers.CharField(),
        "result": serializers.ChoiceField(
            ["unknown"], required=False, help_text="Set when the event exists and the code is not a ticket of yours"
        ),
    },
)


class EventCheckInApi(OrganizerEventApi):
    check_in_methods = frozenset({"POST"})

    class InputSerializer(StrictSerializer):
        code = serializers.CharField(max_length=64, help_text="Scanned or typed; case, spaces and dashes are ignored")

    class OutputSerializer(serializers.Serializer):
        result = serializers.ChoiceField(["valid", "already_checked_in", "void", "wrong_event"])
        ticket = TicketSerializer(allow_null=True)
        checked_in_at = serializers.DateTimeField(
            allow_null=True, help_text="`valid`: now; `already_checked_in`: the first time"
        )

    @extend_schema(
        operation_id="ticket_check_in",
        request=InputSerializer,
        responses={
            200: OutputSerializer,
            400: BAD_REQUEST,
            403: OpenApiResponse(ERROR, description="Viewers cannot check tickets in (owners, admins, door staff can)"),
            404: OpenApiResponse(
                CHECK_IN_UNKNOWN,
                description='No such event in your organizations; or `"result": "unknown"`: no ticket has this code',
            ),
        },
        description=(
            "`valid` checks the ticket in: two scans at the same moment give one `valid` and one "
            "`already_checked_in`. `void`: refunded or cancelled; `wrong_event`: a ticket of another event."
        ),
        tags=["check-in"],
    )
    def post(self, request, event_id):
        event = self.event
        data = self.InputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        checked = services.ticket_check_in(
            event=event, code=data.validated_data["code"], acting_user=acting_user(request)
        )
        if checked.result == "unknown":
            return Response(
                {"code": "not_found", "result": "unknown", "detail": _("No ticket has this code.")},
                status=status.HTTP_404_NOT_FOUND,
            )
        return Response(self.OutputSerializer(checked).data)


class SalesTicketTypeSerializer(serializers.Serializer):
    id = serializers.UUIDField(source="ticket_type.pk")
    name = serializers.CharField(source="ticket_type.name")
    price = serializers.IntegerField(source="ticket_type.price")
    currency = serializers.CharField(source="ticket_type.currency")
    capacity = serializers.IntegerField(source="ticket_type.capacity")
    sold = serializers.IntegerField()
    reserved = serializers.IntegerField(help_text="Held by orders awaiting payment")
    remaining = serializers.IntegerField()
    revenue = serializers.IntegerField(help_text="Price of the tickets issued, refunded ones included")
    refunded = serializers.IntegerField(help_text="Price of the tickets voided by refunds")
    checked_in = serializers.IntegerField()


class EventSalesApi(OrganizerEventApi):
    class OutputSerializer(serializers.Serializer):
        currency = serializers.CharField()
        sold = serializers.IntegerField()
        checked_in = serializers.IntegerField()
        captured = serializers.IntegerField(help_text="Payments booked in the ledger, in the currency's minor unit")
        refunded = serializers.IntegerField(help_text="Refunds booked in the ledger")
        net = serializers.IntegerField(help_text="captured - refunded")
        orders_paid = serializers.IntegerField()
        orders_pending = serializers.IntegerField()
        orders_needing_attention = serializers.IntegerField(help_text="Paid but needing a refund or a review")
        ticket_types = SalesTicketTypeSerializer(many=True, source="types")

    @extend_schema(
        operation_id="event_sales",
        responses={200: OutputSerializer, 404: NOT_FOUND},
        description="The sales dashboard's numbers, in total and per ticket type.",
        tags=["orders"],
    )
    def get(self, request, event_id):
        event = self.event
        return Response(self.OutputSerializer(selectors.sales_summary(event=event)).data)


# --- The waitlist ----------------------------------------------------------------------------------


class WaitlistJoinApi(APIView):
    authentication_classes: list = []
    permission_classes = [AllowAny]

    class InputSerializer(StrictSerializer):
        ticket_type = serializers.UUIDField(help_text="A sold-out ticket type of this event")
        email = serializers.EmailField(max_length=254, help_text="The offer is sent here when a seat frees up")
        name = serializers.CharField(allow_blank=True, max_length=200, required=False, default="")
        access_code = serializers.CharField(
            allow_blank=True, max_length=40, required=False, default="", help_text="For a hidden ticket type"
        )

    class OutputSerializer(serializers.Serializer):
        id = serializers.UUIDField(source="pk")
        ticket_type = serializers.UUIDField(source="ticket_type_id")
        status = serializers.CharField()
        joined_at = serializers.DateTimeField(source="created_at")
        url = serializers.SerializerMethodField(
            help_text="The entry's page, for the entry's whole life: its place, its offer, the way out (the held "
            "seat is bought through the offer email's own link)"
        )

        def get_url(self, entry) -> str:
            return settings.SITE_URL + services.waitlist_entry_path(entry)

    @extend_schema(
        operation_id="waitlist_join",
        request=InputSerializer,
        responses={
            201: OutputSerializer,
            400: OpenApiResponse(
                FIELD_ERRORS,
                description="`invalid`: field errors under `errors` (bad input, a type that is not sold out, an "
                "address already in line); `parse_error`, `too_large` as everywhere",
            ),
            404: OpenApiResponse(ERROR, description="No published ticketed event with this id"),
            429: OpenApiResponse(ERROR, description="`throttled`: too many attempts from this client"),
        },
        description=(
            "Public, no token. Puts an email address in line for a sold-out ticket type. When a seat frees up, "
            "the first in line gets an email offering it, held for them for a while (docs/waitlist.md)."
        ),
        tags=["tickets"],
    )
    def post(self, request, event_id):
        if checkout_is_throttled(request._request):
            return _throttled()
        event = event_on_sale(event_id=event_id)
        data = self.InputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        body = data.validated_data
        try:
            entry = services.waitlist_join(
                event=event,
                ticket_type_id=body["ticket_type"],
                email=body["email"],
                name=body["name"],
                language=_buyer_language(request, event),
                access_code=body["access_code"],
            )
        except DjangoValidationError as invalid:
            raise exceptions.ValidationError(_service_errors(invalid)) from None
        return Response(self.OutputSerializer(entry).data, status=status.HTTP_201_CREATED)


class WaitlistEntrySerializer(serializers.Serializer):
    id = serializers.UUIDField(source="pk")
    ticket_type = TicketTypeRefSerializer()
    email = serializers.EmailField()
    name = serializers.CharField()
    language = serializers.CharField()
    status = serializers.ChoiceField(choices=WaitlistEntry.Status.choices)
    joined_at = serializers.DateTimeField(source="created_at")
    offered_at = serializers.DateTimeField(allow_null=True)
    offer_expires_at = serializers.DateTimeField(allow_null=True)
    order_id = serializers.UUIDField(allow_null=True, help_text="The order that took the offer")


class EventWaitlistApi(OrganizerEventApi):
    pagination_class = Pagination

    @extend_schema(
        operation_id="event_waitlist",
        responses={200: WaitlistEntrySerializer(many=True), 404: NOT_FOUND},
        description="The event's waitlist in line order (every status), all ticket types.",
        tags=["orders"],
    )
    def get(self, request, event_id):
        return paginated_response(
            queryset=selectors.waitlist_list(event=self.event),
            serializer_class=WaitlistEntrySerializer,
            request=request,
            view=self,
        )
