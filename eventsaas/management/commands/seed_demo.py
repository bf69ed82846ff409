"""Create (idempotently) the demo organization, organizer, event and ~50 guests in households,
and a published ticketed event with two ticket types (one with a small capacity)."""

import json
import os
import random
import zoneinfo
from datetime import timedelta

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError
from django.db import transaction
from django.urls import reverse
from django.utils import timezone
from django.utils.text import slugify

from billing import payments
from billing.models import ConnectedAccount
from billing.services import connected_account_ensure, connected_account_sync
from events.models import Event, TicketType
from events.services import event_create, ticket_type_create
from eventsaas.models import AuditLog
from eventsaas.money import money_format
from eventsaas.services import audit_log_record
from guests.models import Guest
from guests.services import guest_create, guest_group_connect
from tenants.models import Membership, Role, Tenant
from tenants.services import tenant_create

User = get_user_model()

ORGANIZER_EMAIL = "organizer@demo.eventsaas.test"
ORGANIZER_PASSWORD = "demo-organizer-pass"
STAFF_EMAIL = "staff@demo.eventsaas.test"
STAFF_PASSWORD = "demo-staff-pass"
TENANT_SLUG = "demo"
EVENT_SLUG = "summer-party"
TICKETED_EVENT_SLUG = "demo-concert"
# (name, price in cents, capacity): a roomy type and one that sells out quickly in a demo.
TICKET_TYPES = [("General", 2500, 200), ("Front row", 6000, 5)]
# Free registration (issue #17): a ticketed event whose one type costs nothing, open in every payment mode.
FREE_EVENT_SLUG = "demo-meetup"
FREE_TICKET_TYPE = ("Free entry", 0, 50)
SEEDED = "demo.seeded"  # the audit entry that says the demo was seeded in full

FIRST_NAMES = [
    "Ana",
    "Lisa",
    "Marco",
    "Sofía",
    "Jonas",
    "Emma",
    "Lucas",
    "Mía",
    "Noah",
    "Olivia",
    "Mateo",
    "Zoe",
    "Hugo",
    "Lena",
    "Pablo",
    "Nora",
    "Elias",
    "Clara",
    "Iván",
    "Maya",
    "Tomás",
    "Ida",
    "Leo",
    "Alba",
]
LAST_NAMES = [
    "García",
    "Müller",
    "Smith",
    "Rossi",
    "Dubois",
    "Novak",
    "Jensen",
    "López",
    "Ibáñez",
    "Kowalski",
    "Brown",
    "Fernández",
    "Schmidt",
    "Moreau",
    "Silva",
    "Nakamura",
    "O'Brien",
    "Andersen",
    "Costa",
    "Weber",
    "Pérez",
    "Álvarez",
]


class Command(BaseCommand):
    help = "Create the demo organization, organizer, event and guests (safe to run again)."

    def add_arguments(self, parser):
        parser.add_argument("--json", action="store_true", help="Print the logins as JSON for scripts and tests.")
        parser.add_argument(
            "--allow-production",
            action="store_true",
            help="Seed even with DJANGO_ENV=production: only for a throwaway installation (the passwords are public).",
        )

    def handle(self, *args, **options):
        if settings.IS_PRODUCTION and not options["allow_production"]:
            # The demo's logins, a superuser among them, are printed here and in the README: on a real
            # installation they would be open doors.
            raise CommandError(
                "seed_demo creates accounts whose passwords are public (a superuser among them), so it does not run "
                "with DJANGO_ENV=production. For a throwaway installation pass --allow-production."
            )
        with transaction.atomic():
            organizer = self._user(ORGANIZER_EMAIL, ORGANIZER_PASSWORD, first_name="Dana", last_name="Demo")
            self._user(STAFF_EMAIL, STAFF_PASSWORD, is_staff=True, is_superuser=True, first_name="Sam")
            tenant = Tenant.objects.filter(slug=TENANT_SLUG).first()
            if tenant is None or not AuditLog.objects.filter(tenant_id=tenant.pk, action=SEEDED).exists():
                tenant = self._seed(tenant, organizer)
        # Seeded once (bin/run runs this at every start): from then on the demo is the organizer's to change,
        # and a deleted or renamed ticket type, guest or event stays as they left it.
        event = Event.objects.for_tenant(tenant).filter(slug=EVENT_SLUG).first()
        concert = Event.objects.for_tenant(tenant).filter(slug=TICKETED_EVENT_SLUG).first()
        free_event = Event.objects.for_tenant(tenant).filter(slug=FREE_EVENT_SLUG).first()
        ticket_types = (
            list(TicketType.objects.for_tenant(tenant).filter(event_id=concert.pk).order_by("position", "name"))
            if concert is not None
            else []
        )
        account = ConnectedAccount.objects.for_tenant(tenant).first()

        guests = list(Guest.objects.for_event(event).order_by("last_name", "first_name")) if event else []
        logins = self._featured_logins(guests)
        # Where this process serves (bin/run's PORT); a production installation is reached at its SITE_URL.
        url = settings.SITE_URL if settings.IS_PRODUCTION else f"http://127.0.0.1:{os.environ.get('PORT', '8000')}"
        shop_url = url + reverse("billing:shop", kwargs={"event_id": concert.pk}) if concert else None
        data = {
            "url": url,
            "organizer": {"email": ORGANIZER_EMAIL, "password": ORGANIZER_PASSWORD, "organization": tenant.slug},
            "staff": {"email": STAFF_EMAIL, "password": STAFF_PASSWORD},
            "event": {"id": str(event.pk), "name": event.name, "slug": event.slug} if event else None,
            "ticketed_event": {
                "id": str(concert.pk),
                "name": concert.name,
                "shop_url": shop_url,
                "ticket_types": [
                    {"id": str(t.pk), "name": t.name, "price": t.price, "currency": t.currency, "capacity": t.capacity}
                    for t in ticket_types
                ],
            }
            if concert
            else None,
            # The organization's Stripe account (simulated in test-payment mode): paid tickets sell while it can
            # take charges. None when payments are configured for real (onboard at the Payments page).
            "connected_account": (
                {
                    "id": account.stripe_account_id,
                    "simulated": account.is_test,
                    "charges_enabled": account.charges_enabled,
                    "payouts_enabled": account.payouts_enabled,
                    "details_submitted": account.details_submitted,
                }
                if account is not None
                else None
            ),
            "free_event_id": str(free_event.pk) if free_event else None,
            "featured_guests": logins,
            "guests": [
                {
                    "code": g.code,
                    "first_name": g.first_name,
                    "last_name": g.last_name,
                    "group_id": str(g.group_id) if g.group_id else None,
                    "expected_guests": g.expected_guests,
                }
                for g in guests
            ],
        }
        if options["json"]:
            self.stdout.write(json.dumps(data, ensure_ascii=False, indent=2))
            return
        if event is not None:
            self.stdout.write(self.style.SUCCESS(f"Demo data ready: {len(guests)} guests for “{event.name}”."))
        self.stdout.write(f"  Organizer login: {ORGANIZER_EMAIL} / {ORGANIZER_PASSWORD}")
        self.stdout.write(f"  Staff (Django admin at /admin/): {STAFF_EMAIL} / {STAFF_PASSWORD}")
        for login in logins:
            self.stdout.write(
                f"  Guest login at /rsvp/: code {login['code']} + last name {login['last_name']} ({login['note']})"
            )
        if concert is not None:
            prices = ", ".join(f"{t.name} {money_format(t.price, t.currency)}" for t in ticket_types)
            self.stdout.write(f"  Ticket shop of “{concert.name}” ({prices}): {shop_url}")
        if free_event is not None:
            free_url = url + reverse("billing:shop", kwargs={"event_id": free_event.pk})
            self.stdout.write(f"  Free registration for “{free_event.name}”: {free_url}")

    def _seed(self, tenant: Tenant | None, organizer) -> Tenant:
        """The demo organization and its events, or what a seed cut short left out; marked seeded at the end."""
        if tenant is None:
            tenant = tenant_create(name="Demo Events", owner=organizer)
            Tenant.objects.filter(pk=tenant.pk).update(slug=TENANT_SLUG)
            tenant.refresh_from_db()
        Membership.objects.get_or_create(tenant=tenant, user=organizer, defaults={"role": Role.OWNER})
        event = Event.objects.for_tenant(tenant).filter(slug=EVENT_SLUG).first() or self._event(tenant, organizer)
        if not Guest.objects.for_event(event).exists():
            self._guests(event, organizer)
        concert = Event.objects.for_tenant(tenant).filter(slug=TICKETED_EVENT_SLUG).first() or self._concert(
            tenant, organizer
        )
        self._ticket_types(concert, organizer)
        self._connected_account(tenant, organizer)
        self._free_event(tenant, organizer)
        # Last: a seed cut short (MongoDB has no transaction around it) is completed by the next run.
        audit_log_record(action=SEEDED, tenant=tenant, actor_user=organizer)
        return tenant

    def _connected_account(self, tenant, organizer) -> None:
        """In test-payment mode, a simulated Stripe account that finished onboarding: the demo sells paid tickets.

        Its state comes from a signed simulated account.updated applied by the same mirror the Connect webhook
        uses. With real Stripe keys nothing is simulated: the organizer onboards at the Payments page.
        """
        if payments.payment_mode() != "test":
            return
        account = connected_account_ensure(tenant=tenant, acting_user=organizer)
        if account.is_test and not account.charges_enabled:
            payload, _signature = payments.simulated_account_event(account=account)
            connected_account_sync(event=json.loads(payload))

    def _user(self, email, password, **extra):
        user = User.objects.filter(email=email).first()
        if user is None:
            # Demo accounts count as verified: the demo invites guests and sells tickets right away.
            user = User.objects.create_user(email=email, password=password, email_verified_at=timezone.now(), **extra)
        return user

    def _event(self, tenant, organizer):
        now = timezone.now().replace(minute=0, second=0, microsecond=0)
        return event_create(
            tenant=tenant,
            acting_user=organizer,
            name="Summer Garden Party",
            slug=EVENT_SLUG,
            description="Food, music and friends in the garden. Children welcome.",
            status=Event.Status.PUBLISHED,
            starts_at=now + timedelta(days=30),
            ends_at=now + timedelta(days=30, hours=6),
            timezone="Europe/Madrid",
            location="Jardín Botánico, Madrid",
            dress_code="Garden casual",
            rsvp_deadline=now + timedelta(days=20),
            language="en",
            questions=[
                {"key": "song", "label": "Which song gets you dancing?", "choices": []},
                {"key": "meal", "label": "Main course", "choices": ["Fish", "Meat", "Vegetarian"]},
            ],
        )

    def _concert(self, tenant, organizer):
        # 20:00 local time three weeks ahead, whatever the server's zone.
        madrid = zoneinfo.ZoneInfo("Europe/Madrid")
        starts_at = (timezone.now().astimezone(madrid) + timedelta(days=21)).replace(
            hour=20, minute=0, second=0, microsecond=0
        )
        return event_create(
            tenant=tenant,
            acting_user=organizer,
            kind=Event.Kind.TICKETED,
            name="Demo Concert",
            slug=TICKETED_EVENT_SLUG,
            description="A night of live jazz. Doors open at 19:30.",
            status=Event.Status.PUBLISHED,
            starts_at=starts_at,
            ends_at=starts_at + timedelta(hours=3),
            timezone="Europe/Madrid",
            location="Sala Clamores, Madrid",
            dress_code="Smart casual",
            language="en",
            attendee_names_required=True,
            questions=[
                {
                    "key": "heard",
                    "label": "How did you hear about the concert?",
                    "choices": ["Friends", "Social media", "Poster", "Other"],
                }
            ],
        )

    def _ticket_types(self, event, organizer) -> None:
        types = TicketType.objects.for_tenant(event.tenant).filter(event_id=event.pk)
        existing = set(types.values_list("name", flat=True))
        for position, (name, price, capacity) in enumerate(TICKET_TYPES):
            if name not in existing:
                ticket_type_create(
                    event=event,
                    acting_user=organizer,
                    name=name,
                    price=price,
                    currency="eur",
                    capacity=capacity,
                    max_per_order=10 if capacity > 10 else 4,
                    position=position,
                )

    def _free_event(self, tenant, organizer) -> Event:
        """A published ticketed event with one free ticket type: registration without any payment."""
        event = Event.objects.for_tenant(tenant).filter(slug=FREE_EVENT_SLUG).first()
        if event is None:
            madrid = zoneinfo.ZoneInfo("Europe/Madrid")
            starts_at = (timezone.now().astimezone(madrid) + timedelta(days=14)).replace(
                hour=18, minute=30, second=0, microsecond=0
            )
            event = event_create(
                tenant=tenant,
                acting_user=organizer,
                kind=Event.Kind.TICKETED,
                name="Demo Meetup",
                slug=FREE_EVENT_SLUG,
                description="An open evening of short talks. Free, but please register.",
                status=Event.Status.PUBLISHED,
                starts_at=starts_at,
                ends_at=starts_at + timedelta(hours=2),
                timezone="Europe/Madrid",
                location="Biblioteca Central, Madrid",
                language="en",
            )
        name, price, capacity = FREE_TICKET_TYPE
        if not TicketType.objects.for_tenant(tenant).filter(event_id=event.pk, name=name).exists():
            ticket_type_create(
                event=event,
                acting_user=organizer,
                name=name,
                price=price,
                currency="eur",
                capacity=capacity,
                max_per_order=4,
                position=0,
            )
        return event

    def _guests(self, event, organizer):
        rng = random.Random(2026)
        # Households of 1-4 logins; some guests bring small children without a login.
        sizes = [2, 1, 3, 2, 1, 2, 4, 1, 2, 2, 3, 1, 2, 1, 2, 3, 2, 1, 2, 2, 1, 2, 3, 2, 2, 1]
        for household_index, size in enumerate(sizes):
            last_name = LAST_NAMES[household_index % len(LAST_NAMES)]
            members = []
            # No two members of a household share a first name: the household form tells them apart by it.
            for member_index, first_name in enumerate(rng.sample(FIRST_NAMES, size)):
                # example.com addresses: invitations and confirmations appear on the console in development.
                email = f"{slugify(first_name)}.{slugify(last_name)}.{household_index}{member_index}@example.com"
                members.append(
                    guest_create(
                        event=event,
                        acting_user=organizer,
                        first_name=first_name,
                        last_name=last_name,
                        email=email,
                        expected_guests=2 if rng.random() < 0.15 else 1,
                    )
                )
            if len(members) > 1:
                guest_group_connect(event=event, guest_ids=[m.pk for m in members], acting_user=organizer)
        # The first household of two is kept with expected_guests=1 each so the demo logins are predictable.
        Guest.objects.for_event(event).filter(last_name=LAST_NAMES[0]).update(expected_guests=1)

    @staticmethod
    def _featured_logins(guests):
        by_group = {}
        for guest in guests:
            if guest.group_id:
                by_group.setdefault(guest.group_id, []).append(guest)
        couple = next((m for m in by_group.values() if len(m) == 2 and all(g.expected_guests == 1 for g in m)), [None])[
            0
        ]
        single = next((g for g in guests if g.group_id is None), None)
        logins = []
        if couple:
            logins.append({"code": couple.code, "last_name": couple.last_name, "note": "household of 2"})
        if single:
            logins.append({"code": single.code, "last_name": single.last_name, "note": "invited alone"})
        return logins
