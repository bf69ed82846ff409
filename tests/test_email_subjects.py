"""A line break in a name never reaches a mail header: every email of that event or organization is sent.

Before, an event named "Gala\\r\\nBcc: …" made every email of the event fail with
BadHeaderError, for good. Subjects are built in one place (eventsaas.mail.email_subject);
the body keeps the name as typed.
"""

import pytest
from django.core import mail
from django.utils import timezone

from billing.models import LedgerEntry, Order
from billing.notifications import order_attention_notify, order_closed_notify, order_refund_emails_send
from eventsaas.mail import email_subject, header_safe
from guests import notifications
from guests.models import Guest
from tenants import services as tenant_services
from tenants.models import Membership, Role
from tests.api.sweep_fixtures import paid_order
from tests.factories import EventFactory, GuestFactory, MembershipFactory, TicketedEventFactory, TicketTypeFactory
from tests.support.commits import after_commit

pytestmark = pytest.mark.django_db

HOSTILE = "Gala\r\nBcc: victim@example.com\n\u2028night"


def assert_clean(message, *, body_has="Bcc: victim@example.com"):
    assert "\r" not in message.subject and "\n" not in message.subject and "\u2028" not in message.subject
    assert "Gala Bcc: victim@example.com night" in message.subject
    # The whole message builds (Django refuses a header with a line break here) and has only its recipients.
    built = message.message()
    assert built["Bcc"] is None
    assert message.recipients() == message.to
    assert body_has in message.body


def test_header_safe_turns_every_line_break_and_control_character_into_one_space():
    assert header_safe("a\r\nb\nc\rd\x00e\x1bf\u2028g\u2029h\x85i   j") == "a b c d e f g h i j"
    assert email_subject("You are invited: %(event)s", event="x\r\ny") == "You are invited: x y"
    assert email_subject("Line\nbreak in the template") == "Line break in the template"


@pytest.fixture
def hostile_event(tenant):
    return EventFactory(tenant=tenant, name=HOSTILE, rsvp_deadline=timezone.now() + timezone.timedelta(days=2))


def test_guest_emails_of_an_event_with_a_line_break_in_its_name_are_sent(hostile_event, tenant, settings):
    settings.REMINDER_DAYS_BEFORE_DEADLINE = 3
    MembershipFactory(tenant=tenant, role=Role.OWNER, user__email="owner@example.com")
    guest = GuestFactory(event=hostile_event, email="guest@example.com")
    answered = GuestFactory(event=hostile_event, email="answered@example.com")

    assert notifications.guest_invitation_send(guest=guest, window="w")
    assert notifications.event_reminders_send(event=hostile_event) == 2
    Guest.objects.filter(pk=answered.pk).update(status=Guest.Status.COMING, num_guests=1, rsvp_at=timezone.now())
    answered.refresh_from_db()
    assert notifications.guest_confirmation_send(guest=answered, window="w")
    assert notifications.event_digest_send(event=hostile_event) >= 1

    kinds = {message.subject.split(":")[0] for message in mail.outbox}
    assert {"You are invited", "Please answer", "Your answer for Gala Bcc", "Today at Gala Bcc"} <= kinds
    for message in mail.outbox:
        assert_clean(message, body_has="Gala")


def test_the_tickets_email_and_the_attention_email_of_such_an_event_are_sent(
    tenant, django_capture_on_commit_callbacks
):
    MembershipFactory(tenant=tenant, role=Role.OWNER, user__email="owner@example.com")
    concert = TicketedEventFactory(tenant=tenant, name=HOSTILE)
    with django_capture_on_commit_callbacks(execute=True):
        order = paid_order(
            event=concert,
            ticket_type=TicketTypeFactory(event=concert),
            quantity=1,
            buyer_name="B",
            buyer_email="b@x.org",
        )
    [tickets] = [message for message in mail.outbox if message.to == ["b@x.org"]]
    assert_clean(tickets, body_has="Gala")

    Order.objects.filter(pk=order.pk).update(status=Order.Status.NEEDS_REVIEW)
    order.refresh_from_db()
    assert order_attention_notify(order=order)
    assert_clean(mail.outbox[-1], body_has="Gala")


def test_a_teammate_invitation_of_an_organization_with_a_line_break_in_its_name_is_sent(tenant, owner):
    tenant.name = HOSTILE
    tenant.save()
    with after_commit():
        tenant_services.invitation_create(
            tenant=tenant,
            email="mate@example.com",
            role=Role.ADMIN,
            acting_membership=Membership.objects.get(user=owner),
            accept_url_builder=lambda invitation: "https://example.com/accept",
        )
    [message] = mail.outbox
    assert_clean(message, body_has="Gala")


def test_the_refund_and_the_expiry_emails_of_such_an_event_are_sent(tenant, owner, django_capture_on_commit_callbacks):
    concert = TicketedEventFactory(tenant=tenant, name=HOSTILE)
    ticket_type = TicketTypeFactory(event=concert)
    order = paid_order(event=concert, ticket_type=ticket_type, quantity=1, buyer_name="B", buyer_email="b@x.org")
    LedgerEntry.objects.create(
        tenant_id=tenant.pk,
        event_id=concert.pk,
        order_id=order.pk,
        kind=LedgerEntry.Kind.REFUND,
        amount=order.total,
        currency=order.currency,
        stripe_object_id="re_hostile",
    )
    mail.outbox.clear()
    assert order_refund_emails_send(order=order) == 1
    [refund] = mail.outbox
    assert refund.subject.startswith("Your refund for ")
    assert_clean(refund, body_has="Gala")

    Order.objects.filter(pk=order.pk).update(status=Order.Status.EXPIRED, paid_amount=0)
    order.refresh_from_db()
    assert order_closed_notify(order=order, reason="sweep")
    Order.objects.filter(pk=order.pk).update(
        status=Order.Status.CANCELLED, closed_notice_claimed_at=None, closed_notified_at=None
    )
    order.refresh_from_db()
    assert order_closed_notify(order=order, reason="payment_failed")
    expired, failed = mail.outbox[1:]
    assert expired.subject.startswith("Your order for ") and expired.subject.endswith(" expired")
    assert failed.subject.startswith("Your payment for ") and failed.subject.endswith(" failed")
    for message in (expired, failed):
        assert_clean(message, body_has="Gala")
