"""What users do after a database move, run against the target (tests/system/test_db_move.py).

Run as `python -m tests.support.db_move_probe GUEST_CODE GUEST_LAST_NAME EMAIL PASSWORD EVENT_ID
CONCERT_ID TICKET_CODE` with DATABASE_URL set to the moved-to database; prints one JSON object: what the
guest login, the organizer login, the ticket's check-in and event_stats gave on that database.
"""

import json
import os
import sys

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "eventsaas.settings_test")


def main(guest_code, guest_last_name, email, password, event_id, concert_id, ticket_code) -> dict:
    import django

    django.setup()
    from django.test import Client
    from django.test.utils import setup_test_environment
    from django.urls import reverse

    from billing.models import Order, Ticket
    from billing.services import ticket_check_in
    from events.models import Event
    from guests.models import Guest
    from guests.selectors import event_stats
    from tenants.models import User

    setup_test_environment()
    # Before the guest's login, which records the guest's activity (a write of its own).
    stats = event_stats(event=Event.objects.get(pk=event_id))
    guest_client = Client()
    guest_login = guest_client.post(reverse("rsvp:login"), {"code": guest_code, "last_name": guest_last_name})
    answer_page = guest_client.get(reverse("rsvp:answer"))
    organizer_client = Client()
    organizer_login = organizer_client.post(reverse("login"), {"username": email, "password": password})
    organizer = User.objects.get(email=email)
    concert = Event.objects.get(pk=concert_id)
    ids = {
        model._meta.label: sorted(str(pk) for pk in model.objects.values_list("pk", flat=True))
        for model in (User, Event, Guest, Order, Ticket)
    }
    return {
        "ids": ids,
        "guest_login": [guest_login.status_code, guest_login.get("Location")],
        "guest_answer_page": answer_page.status_code,
        "organizer_login": [organizer_login.status_code, organizer_login.get("Location")],
        "organizer_session_user": organizer_client.session.get("_auth_user_id"),
        "check_in": ticket_check_in(event=concert, code=ticket_code, acting_user=organizer).result,
        "check_in_again": ticket_check_in(event=concert, code=ticket_code, acting_user=organizer).result,
        "event_stats": stats,
    }


if __name__ == "__main__":
    print(json.dumps(main(*sys.argv[1:]), default=str))
