import datetime as dt

import factory
from django.utils import timezone

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


class TicketedEventFactory(EventFactory):
    kind = Event.Kind.TICKETED
    rsvp_deadline = None
    name = factory.Sequence(lambda n: f"Concert {n}")
    slug = factory.Sequence(lambda n: f"concert-{n}")


class TicketTypeFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = TicketType

    event = factory.SubFactory(TicketedEventFactory)
    tenant = factory.SelfAttribute("event.tenant")
    name = factory.Sequence(lambda n: f"General {n}")
    price = 2500
    currency = "eur"
    capacity = 100
    max_per_order = 10
