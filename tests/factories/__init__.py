import datetime as dt

import factory
from django.utils import timezone

from billing.models import ConnectedAccount
from events.models import Event, TicketType
from guests.codes import generate_code, search_key
from guests.models import Guest
from tenants.models import Membership, Role, Tenant, User


class UserFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = User
        skip_postgeneration_save = True

    email = factory.Sequence(lambda n: f"user{n}@example.com")
    first_name = "Org"
    # Verified unless a test says otherwise (tests/tenants/test_email_verification.py).
    email_verified_at = factory.LazyFunction(timezone.now)
    password = factory.PostGenerationMethodCall("set_password", "correct horse battery")

    @factory.post_generation
    def _save(obj, create, extracted, **kwargs):
        if create:
            obj.save()


class TenantFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Tenant

    name = factory.Sequence(lambda n: f"Org {n}")
    slug = factory.Sequence(lambda n: f"org-{n}")
    verified_at = factory.LazyFunction(timezone.now)


class MembershipFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Membership

    tenant = factory.SubFactory(TenantFactory)
    user = factory.SubFactory(UserFactory)
    role = Role.OWNER


class EventFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Event

    tenant = factory.SubFactory(TenantFactory)
    name = factory.Sequence(lambda n: f"Party {n}")
    slug = factory.Sequence(lambda n: f"party-{n}")
    status = Event.Status.PUBLISHED
    starts_at = factory.LazyFunction(lambda: timezone.now() + dt.timedelta(days=30))
    rsvp_deadline = factory.LazyFunction(lambda: timezone.now() + dt.timedelta(days=20))
    timezone = "Europe/Madrid"
    location = "Garden"
    contact_email = "host@example.com"


class GuestFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Guest

    event = factory.SubFactory(EventFactory)
    tenant = factory.SelfAttribute("event.tenant")
    first_name = factory.Sequence(lambda n: f"Guest{n}")
    last_name = "Doe"
    expected_guests = 1
    code = factory.LazyFunction(generate_code)
    status = Guest.Status.PENDING
    # A coming guest counts their invitation's people unless a test says otherwise (coming <=> at least 1).
    num_guests = factory.LazyAttribute(lambda g: g.expected_guests if g.status == Guest.Status.COMING else 0)
    # What guests.services keeps on every write path.
    search_key = factory.LazyAttribute(
        lambda g: search_key(first_name=g.first_name, last_name=g.last_name, code=g.code)
    )


def connected_account_for(tenant, **fields) -> ConnectedAccount:
    """The organization's Stripe account, able to take charges unless `fields` say otherwise.

    A real-looking (not simulated) account, so it takes charges in every payment mode: with real keys (the
    local Stripe server's tests) a simulated one would not. Simulated accounts come from test mode's onboarding.
    """
    defaults = {
        "stripe_account_id": f"acct_1{tenant.pk.hex[:16]}",
        "is_test": False,
        "country": "ES",
        "default_currency": "eur",
        "details_submitted": True,
        "charges_enabled": True,
        "payouts_enabled": True,
        **fields,
    }
    account, _created = ConnectedAccount.objects.get_or_create(tenant=tenant, defaults=defaults)
    return account


class TicketedEventFactory(EventFactory):
    """A ticketed event whose organization can take charges (a simulated Stripe account), so its paid tickets
    sell. `TicketedEventFactory(connected_account=False)` leaves the organization without one (gating tests)."""

    class Meta:
        skip_postgeneration_save = True

    kind = Event.Kind.TICKETED
    rsvp_deadline = None
    name = factory.Sequence(lambda n: f"Concert {n}")
    slug = factory.Sequence(lambda n: f"concert-{n}")

    @factory.post_generation
    def connected_account(obj, create, extracted, **kwargs):
        if create and extracted is not False:
            connected_account_for(obj.tenant)


class TicketTypeFactory(factory.django.DjangoModelFactory):
    """A ticket type; a paid one makes sure its organization can take charges (opt out with
    `connected_account=False`, and give the event the same)."""

    class Meta:
        model = TicketType
        skip_postgeneration_save = True

    event = factory.SubFactory(TicketedEventFactory)
    tenant = factory.SelfAttribute("event.tenant")
    name = factory.Sequence(lambda n: f"General {n}")
    price = 2500
    currency = "eur"
    capacity = 100
    max_per_order = 10

    @factory.post_generation
    def connected_account(obj, create, extracted, **kwargs):
        if create and extracted is not False and obj.price > 0:
            connected_account_for(obj.event.tenant)
