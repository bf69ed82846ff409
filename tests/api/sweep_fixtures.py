"""Shared pieces of the API isolation sweep and the schema fuzz run.

Everything is derived from the generated OpenAPI schema, so an endpoint added
later is swept and fuzzed without touching these files:

- `operations()` lists every operation of the schema;
- `classify()` decides, from the permission classes the view applies to the
  operation's method, whether it is a public, guest or organizer operation;
- `build_world()` creates two organizations A and B with events, guests in a
  group, ticket types, a paid order with its tickets, and tokens for every
  kind of caller;
- `example_body()` builds a minimal valid request body from the operation's
  request schema (with a few per-operation overrides in VALID_BODIES).

This is not a conftest: tests/api/ is shared, so the test modules build their
own fixtures from these functions.
"""

from __future__ import annotations

import base64
import datetime as dt
import functools
import json
import re
import uuid
from dataclasses import dataclass, field
from types import SimpleNamespace

from django.urls import Resolver404, resolve
from django.utils import timezone
from drf_spectacular.generators import SchemaGenerator
from drf_spectacular.renderers import OpenApiJsonRenderer
from rest_framework.permissions import AllowAny

from billing import services as billing_services
from billing.models import LedgerEntry, Order, Ticket, WaitlistEntry
from events.models import Event, TicketType
from eventsaas.models import AuditLog
from guests.models import Guest
from rsvp.models import ChangeRequest
from tenants.models import Invitation, Membership, Role, Tenant, User
from tenants.permissions import IsGuest, IsOrganizer
from tenants.tokens import guest_access_token, organizer_token_pair
from tests.factories import EventFactory, GuestFactory, MembershipFactory, TenantFactory, TicketTypeFactory

HTTP_METHODS = ("get", "put", "post", "patch", "delete")
READ_METHODS = {"GET", "HEAD", "OPTIONS"}
# Path parameters the sweep knows how to fill with organization A's objects.
ID_PARAMS = ("org_slug", "event_id", "guest_id", "ticket_type_id", "order_id", "change_request_id")
# Operations with this tag admit door staff, who otherwise only read.
CHECK_IN_TAG = "check-in"

PUBLIC, GUEST, ORGANIZER = "public", "guest", "organizer"


# --- the schema ----------------------------------------------------------------------------------


@functools.cache
def api_schema() -> dict:
    """The OpenAPI document exactly as /api/schema/?format=json serves it (plain JSON types)."""
    raw = SchemaGenerator().get_schema(request=None, public=True)
    return json.loads(OpenApiJsonRenderer().render(raw, renderer_context={}))


@dataclass(frozen=True)
class Operation:
    method: str  # upper case
    path: str  # as in the schema: /api/v1/events/{event_id}
    operation_id: str
    spec: dict = field(compare=False, hash=False, repr=False)

    @property
    def label(self) -> str:
        return f"{self.method} {self.path}"

    @property
    def params(self) -> list[str]:
        return re.findall(r"\{(\w+)\}", self.path)

    @property
    def is_write(self) -> bool:
        return self.method not in READ_METHODS

    @property
    def is_check_in(self) -> bool:
        return CHECK_IN_TAG in self.spec.get("tags", [])

    @property
    def request_schema(self) -> dict | None:
        content = (self.spec.get("requestBody") or {}).get("content") or {}
        media = content.get("application/json")
        return media.get("schema") if media else None

    def url(self, values: dict) -> str:
        return re.sub(r"\{(\w+)\}", lambda m: str(values[m.group(1)]), self.path)


def operations() -> list[Operation]:
    found = []
    for path, item in sorted(api_schema()["paths"].items()):
        for method in HTTP_METHODS:
            if method in item:
                spec = item[method]
                found.append(Operation(method.upper(), path, spec.get("operationId", ""), spec))
    return found


def view_class(operation: Operation):
    """The DRF view behind an operation, found through the URL resolver (no database needed)."""
    dummy = {name: ("sweep-slug" if "slug" in name else uuid.uuid4()) for name in operation.params}
    try:
        match = resolve(operation.url(dummy))
    except Resolver404:
        return None
    return getattr(match.func, "cls", None) or getattr(match.func, "view_class", None)


def permission_classes(operation: Operation) -> list:
    """The permission classes the view applies to the operation's method (a view may vary them by method)."""
    cls = view_class(operation)
    view = cls()
    view.request = SimpleNamespace(method=operation.method)
    view.args, view.kwargs = (), {}
    return [type(permission) for permission in view.get_permissions()]


def classify(operation: Operation) -> str | None:
    """public, guest or organizer, from the view's permission classes; None when it cannot be told."""
    if view_class(operation) is None:
        return None
    permissions = permission_classes(operation)
    if any(_is_subclass(p, IsOrganizer) for p in permissions):
        return ORGANIZER
    if any(_is_subclass(p, IsGuest) for p in permissions):
        return GUEST
    if permissions and all(_is_subclass(p, AllowAny) for p in permissions):
        return PUBLIC
    return None


def reads_tokens(operation: Operation) -> bool:
    """Whether a public operation still reads a token when one is sent (and may answer its holder differently)."""
    return bool(view_class(operation).authentication_classes)


def _is_subclass(candidate, base) -> bool:
    return isinstance(candidate, type) and issubclass(candidate, base)


# --- request bodies --------------------------------------------------------------------------------

# Property names whose free-text values would not pass the model's validation.
NAME_HINTS = {
    "timezone": "Europe/Madrid",
    "language": "en",
    "first_name": "Sweepy",
    "last_name": "Sweeperson",
    "name": "Sweep Soirée",
    "code": "SWEEP234",
}


def _resolve(schema: dict) -> dict:
    while "$ref" in schema:
        name = schema["$ref"].rsplit("/", 1)[-1]
        schema = api_schema()["components"]["schemas"][name]
    return schema


def takes_ids(schema: dict | None, _seen=None) -> bool:
    """Whether a request schema has a uuid field anywhere (following $refs)."""
    if not isinstance(schema, (dict, list)):
        return False
    if isinstance(schema, list):
        return any(takes_ids(item) for item in schema)
    if schema.get("format") == "uuid":
        return True
    if "$ref" in schema:
        return takes_ids(_resolve(schema))
    return any(takes_ids(value) for value in schema.values() if isinstance(value, (dict, list)))


def example_value(schema: dict, *, name: str = "", uuids: list | None = None, full: bool = False):
    """A small value that satisfies `schema`; uuid fields take ids from `uuids` in turn."""
    schema = _resolve(schema)
    for combinator in ("allOf", "oneOf", "anyOf"):
        if combinator in schema:
            return example_value(schema[combinator][0], name=name, uuids=uuids, full=full)
    if "enum" in schema:
        return next(v for v in schema["enum"] if v not in ("", None))
    kind = schema.get("type")
    if kind == "object" or "properties" in schema:
        props = schema.get("properties", {})
        wanted = [n for n, p in props.items() if not _resolve(p).get("readOnly")]
        if not full:
            wanted = [n for n in wanted if n in schema.get("required", [])]
        return {n: example_value(props[n], name=n, uuids=uuids, full=full) for n in wanted}
    if kind == "array":
        count = max(schema.get("minItems", 0), 2 if (uuids and "uuid" in json.dumps(schema)) else 1)
        return [example_value(schema.get("items", {}), name=name, uuids=uuids, full=full) for _ in range(count)]
    if kind == "boolean":
        return False
    if kind in ("integer", "number"):
        low = schema.get("minimum", 1)
        return max(low, min(1, schema.get("maximum", 1)))
    fmt = schema.get("format")
    if fmt == "uuid":
        if uuids:
            value = uuids.pop(0)
            uuids.append(value)
            return str(value)
        return str(uuid.uuid4())
    if fmt == "date-time":
        return (timezone.now() + dt.timedelta(days=60)).replace(microsecond=0).isoformat()
    if fmt == "date":
        return (timezone.now() + dt.timedelta(days=60)).date().isoformat()
    if fmt == "email":
        return "sweep@example.com"
    if fmt == "uri":
        return "https://example.com/"
    text = NAME_HINTS.get(name, "Sweep")
    low, high = schema.get("minLength", 0), schema.get("maxLength", 200)
    text = text.ljust(low, "x")[:high]
    return text


# Text fields a PATCH may always change to a harmless value.
SAFE_PATCH_FIELDS = {"name", "first_name", "last_name", "description", "location", "dress_code", "dietary", "phone"}

# Overrides where the schema alone does not give a body the handler accepts:
# operation_id -> function(world, values) returning the body. `values` are the
# path values used for the call (A's objects, or B's in the body-injection test).
VALID_BODIES: dict = {
    "rsvp_answer": lambda w, v: {"attending": False},
    "rsvp_change_request": lambda w, v: {"answer": {"attending": False}, "message": "Sweep"},
    "invitations_send": lambda w, v: {"not_yet_invited": True},
    "ticket_check_in": lambda w, v: {"code": w.ticket_code_of(v["event_id"])},
}


def _close_answers(world) -> None:
    past = timezone.now() - dt.timedelta(hours=1)
    Event.objects.filter(pk__in=[world.event_a.pk, world.event_a2.pk, world.event_b.pk]).update(rsvp_deadline=past)


# operation_id -> function(world): the state an operation needs to succeed for its rightful caller,
# set up before each of its sweeps (a change request exists only after the deadline).
PREPARE: dict = {
    "rsvp_change_request": _close_answers,
}


def prepare(operation: Operation, world: World) -> None:
    if operation.operation_id in PREPARE:
        PREPARE[operation.operation_id](world)


# Bodies that name organization A's objects by something other than an id (a ticket code), for
# the injection test: sent by B's owner on B's own path, they must change nothing of A's.
FOREIGN_BODIES: dict = {
    "ticket_check_in": lambda w: {"code": w.tickets_a[0].code},
}


def example_body(operation: Operation, world: World, values: dict, *, uuids: list | None = None):
    """A body the operation accepts from its rightful caller (None when it takes none)."""
    if operation.operation_id in VALID_BODIES:
        return VALID_BODIES[operation.operation_id](world, values)
    schema = operation.request_schema
    if schema is None:
        return None
    uuids = list(uuids if uuids is not None else world.a_guest_ids_for_bodies)
    body = example_value(schema, uuids=uuids)
    if operation.method == "PATCH" and not body:
        # A PATCH with nothing in it proves nothing: change every simple text field.
        full = example_value(schema, uuids=uuids, full=True)
        body = {k: v for k, v in full.items() if k in SAFE_PATCH_FIELDS}
    return body


# A body every strict serializer refuses: an unknown field, and nothing required.
INVALID_BODY = {"sweep_unknown_field": ["not", "valid"]}


# --- the world -----------------------------------------------------------------------------------


@dataclass
class World:
    tenant_a: Tenant
    owner_a: User
    admin_a: User
    viewer_a: User
    door_a: User  # door staff: reads, and checks tickets in
    event_a: Event  # ticketed and published, with guests too
    event_a2: Event  # another event of A (invite only)
    draft_event_a: Event  # A's ticketed event not published yet
    anna: Guest  # A's event, group with lisa; the guest_id the sweep uses
    lisa: Guest
    carl: Guest  # A's event, alone
    sibling_guest: Guest  # A's other event
    sold_type_a: TicketType  # A's event; sold to order_a
    spare_type_a: TicketType  # A's event; nothing sold, so it can be changed and deleted: the ticket_type_id used
    hidden_type_a: TicketType  # A's event; listed only with its access code
    draft_type_a: TicketType  # A's draft event
    order_a: Order  # paid, two tickets of sold_type_a
    tickets_a: list[Ticket]
    change_request_a: ChangeRequest  # anna's, pending: the change_request_id used
    change_request_a2: ChangeRequest  # sibling_guest's, in A's other event
    tenant_b: Tenant
    owner_b: User
    event_b: Event  # ticketed and published
    guest_b: Guest  # B's event, group with guest_b2
    guest_b2: Guest
    type_b: TicketType
    order_b: Order
    tickets_b: list[Ticket]
    change_request_b: ChangeRequest
    tokens: dict = field(default_factory=dict)

    @property
    def values_a(self) -> dict:
        return {
            "org_slug": self.tenant_a.slug,
            "event_id": self.event_a.pk,
            "guest_id": self.anna.pk,
            "ticket_type_id": self.spare_type_a.pk,
            "order_id": self.order_a.pk,
            "change_request_id": self.change_request_a.pk,
        }

    @property
    def values_b(self) -> dict:
        return {
            "org_slug": self.tenant_b.slug,
            "event_id": self.event_b.pk,
            "guest_id": self.guest_b.pk,
            "ticket_type_id": self.type_b.pk,
            "order_id": self.order_b.pk,
            "change_request_id": self.change_request_b.pk,
        }

    @property
    def a_guest_ids_for_bodies(self) -> list:
        return [self.carl.pk, self.anna.pk, self.lisa.pk]

    def ticket_code_of(self, event_id) -> str:
        """A valid ticket code of that event (A's or B's)."""
        tickets = self.tickets_a if str(event_id) == str(self.event_a.pk) else self.tickets_b
        return tickets[0].code

    def markers(self) -> list[str]:
        """Strings that only organization A's data contains; none may show up in a refused response."""
        guests = [self.anna, self.lisa, self.carl, self.sibling_guest]
        types = [self.sold_type_a, self.spare_type_a, self.hidden_type_a, self.draft_type_a]
        return sorted(
            {self.tenant_a.name, self.event_a.name, self.event_a2.name, self.draft_event_a.name, self.event_a.location}
            | {g.first_name for g in guests}
            | {g.last_name for g in guests}
            | {g.code for g in guests}
            | {g.email for g in guests}
            | {g.dietary for g in guests if g.dietary}
            | {t.name for t in types}
            | {self.hidden_type_a.access_code, self.order_a.buyer_name, self.order_a.buyer_email}
            | {self.change_request_a.message, self.change_request_a2.message}
            | {t.code for t in self.tickets_a}
            | {t.display_code for t in self.tickets_a}
        )

    def leaked(self, text: str) -> list[str]:
        return [m for m in self.markers() if m and m.lower() in text.lower()]


def paid_order(*, event: Event, ticket_type: TicketType, quantity: int, buyer_name: str, buyer_email: str) -> Order:
    """An order bought through the public checkout and paid in test-payment mode (the webhook path)."""
    order = billing_services.checkout_start(
        event=event,
        request=billing_services.CheckoutRequest(
            items=[billing_services.CheckoutItem(str(ticket_type.pk), quantity)],
            buyer_name=buyer_name,
            buyer_email=buyer_email,
        ),
    )
    # The webhook task runs after commit, which a test transaction never reaches: process it here.
    billing_services.webhook_event_process(webhook_event=billing_services.order_simulate_payment(order=order))
    order.refresh_from_db()
    assert order.status == Order.Status.PAID, order.status
    return order


def pending_change_request(guest: Guest, message: str) -> ChangeRequest:
    """A guest's open request, as rsvp.services.change_request_create stores it after the deadline."""
    return ChangeRequest.objects.create(
        tenant_id=guest.tenant_id, event_id=guest.event_id, guest=guest, proposed={"attending": False}, message=message
    )


def build_world() -> World:
    tenant_a = TenantFactory(name="Wombatworks Cooperative", slug="wombatworks")
    owner_a = MembershipFactory(tenant=tenant_a, role=Role.OWNER).user
    admin_a = MembershipFactory(tenant=tenant_a, role=Role.ADMIN).user
    viewer_a = MembershipFactory(tenant=tenant_a, role=Role.VIEWER).user
    door_a = MembershipFactory(tenant=tenant_a, role=Role.DOOR).user
    event_a = EventFactory(
        tenant=tenant_a, kind=Event.Kind.TICKETED, name="Quokkafest Midsummer Gala", location="Zanzibarian Orangery"
    )
    event_a2 = EventFactory(tenant=tenant_a, name="Platypus Winter Ball")
    draft_event_a = EventFactory(
        tenant=tenant_a, kind=Event.Kind.TICKETED, status=Event.Status.DRAFT, name="Kookaburra Secret Rehearsal"
    )
    group = uuid.uuid4()
    anna = GuestFactory(
        event=event_a,
        first_name="Ottoline",
        last_name="Quenbyworth",
        group_id=group,
        email="ottoline@quenby.example",
        dietary="Xylophagous diet",
    )
    lisa = GuestFactory(
        event=event_a, first_name="Perpetua", last_name="Quenbyworth", group_id=group, email="perpetua@quenby.example"
    )
    carl = GuestFactory(event=event_a, first_name="Thaddeus", last_name="Vexleyhurst", email="thad@vex.example")
    sibling_guest = GuestFactory(
        event=event_a2, first_name="Ignatius", last_name="Brambleworth", email="ignatius@bramble.example"
    )
    sold_type_a = TicketTypeFactory(event=event_a, name="Wallaby Balcony Seat", capacity=50, position=1)
    spare_type_a = TicketTypeFactory(event=event_a, name="Numbat Standing Room", capacity=20, position=2)
    hidden_type_a = TicketTypeFactory(
        event=event_a, name="Bilby Backstage Pass", access_code="BILBYWHISPER", capacity=5, position=3
    )
    draft_type_a = TicketTypeFactory(event=draft_event_a, name="Echidna Preview Ticket")
    order_a = paid_order(
        event=event_a,
        ticket_type=sold_type_a,
        quantity=2,
        buyer_name="Marmaduke Fernsby",
        buyer_email="marmaduke@fernsby.example",
    )

    tenant_b = TenantFactory(name="Rival Ltd", slug="rival-ltd")
    owner_b = MembershipFactory(tenant=tenant_b, role=Role.OWNER).user
    event_b = EventFactory(tenant=tenant_b, kind=Event.Kind.TICKETED, name="Rival gala")
    group_b = uuid.uuid4()
    guest_b = GuestFactory(event=event_b, first_name="Rita", last_name="Rival", group_id=group_b)
    guest_b2 = GuestFactory(event=event_b, first_name="Rob", last_name="Rival", group_id=group_b)
    type_b = TicketTypeFactory(event=event_b, name="Rival seat")
    order_b = paid_order(
        event=event_b, ticket_type=type_b, quantity=1, buyer_name="Rex Rival", buyer_email="rex@rival.example"
    )

    world = World(
        tenant_a=tenant_a,
        owner_a=owner_a,
        admin_a=admin_a,
        viewer_a=viewer_a,
        door_a=door_a,
        event_a=event_a,
        event_a2=event_a2,
        draft_event_a=draft_event_a,
        anna=anna,
        lisa=lisa,
        carl=carl,
        sibling_guest=sibling_guest,
        sold_type_a=sold_type_a,
        spare_type_a=spare_type_a,
        hidden_type_a=hidden_type_a,
        draft_type_a=draft_type_a,
        order_a=order_a,
        tickets_a=list(Ticket.objects.filter(order_id=order_a.pk).order_by("seat")),
        change_request_a=pending_change_request(anna, "Quokka laryngitis, terribly sorry"),
        change_request_a2=pending_change_request(sibling_guest, "Platypus paddling accident"),
        tenant_b=tenant_b,
        owner_b=owner_b,
        event_b=event_b,
        guest_b=guest_b,
        guest_b2=guest_b2,
        type_b=type_b,
        order_b=order_b,
        tickets_b=list(Ticket.objects.filter(order_id=order_b.pk).order_by("seat")),
        change_request_b=pending_change_request(guest_b, "Rival regrets"),
    )
    world.tokens = {
        "anonymous": None,
        "owner_a": organizer_token_pair(owner_a)["access"],
        "admin_a": organizer_token_pair(admin_a)["access"],
        "viewer_a": organizer_token_pair(viewer_a)["access"],
        "door_a": organizer_token_pair(door_a)["access"],
        "owner_b": organizer_token_pair(owner_b)["access"],
        "guest_a": guest_access_token(anna),
        "guest_a_other_event": guest_access_token(sibling_guest),
        "guest_b": guest_access_token(guest_b),
    }
    return world


def auth_headers(token: str | None) -> dict:
    return {"HTTP_AUTHORIZATION": f"Bearer {token}"} if token else {}


def tampered_token(token: str, **claims) -> str:
    """The same header and signature over a payload with `claims` changed: what a forger can make."""
    header, payload, signature = token.split(".")
    decoded = json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))
    forged = base64.urlsafe_b64encode(json.dumps({**decoded, **claims}).encode()).rstrip(b"=").decode()
    return f"{header}.{forged}.{signature}"


# --- the database, row by row ----------------------------------------------------------------------


def _rows(model) -> list[dict]:
    return sorted(model.objects.values(), key=lambda row: row["id"])


def db_snapshot() -> dict:
    return {
        "tenants": sorted(Tenant.objects.values_list("id", "name", "slug")),
        "users": sorted(User.objects.values_list("id", "email", "is_active")),
        "memberships": _rows(Membership),
        "invitations": _rows(Invitation),
        "events": _rows(Event),
        "guests": _rows(Guest),
        "ticket_types": _rows(TicketType),
        "orders": _rows(Order),
        "tickets": _rows(Ticket),
        "ledger": _rows(LedgerEntry),
        "waitlist": _rows(WaitlistEntry),
        "change_requests": _rows(ChangeRequest),
        "audit_log_count": AuditLog.objects.count(),
    }


TENANT_TABLES = ("memberships", "events", "guests", "ticket_types", "orders", "tickets", "ledger", "change_requests")


def snapshot_of_tenant(snapshot: dict, tenant_id) -> dict:
    """The part of a snapshot that belongs to one organization."""
    return {table: [r for r in snapshot[table] if r["tenant_id"] == tenant_id] for table in TENANT_TABLES}


def snapshot_diff(before: dict, after: dict) -> str:
    lines = []
    for key in before:
        if before[key] != after[key]:
            if isinstance(before[key], list):
                gone = [r for r in before[key] if r not in after[key]]
                new = [r for r in after[key] if r not in before[key]]
                lines.append(f"{key}: before {gone} -> after {new}")
            else:
                lines.append(f"{key}: {before[key]} -> {after[key]}")
    return "; ".join(lines)
