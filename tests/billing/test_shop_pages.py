"""The public ticket shop of an event: what it shows, what it refuses and what a POST starts."""

import datetime as dt
import logging
import re

import pytest
from django.core.cache import cache
from django.utils import timezone

from billing import payments
from billing.models import Order
from events.models import Event
from tests.factories import EventFactory, TicketedEventFactory, TicketTypeFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def concert(tenant):
    return TicketedEventFactory(
        tenant=tenant,
        name="Demo Concert",
        starts_at=dt.datetime(2031, 6, 1, 18, 0, tzinfo=dt.UTC),  # 20:00 in Madrid (summer time)
        location="Sala Apolo, Barcelona",
        dress_code="Black tie optional",
        description="An evening of chamber music.",
    )


@pytest.fixture
def general(concert):
    return TicketTypeFactory(event=concert, name="General", price=2500, capacity=200, position=0)


@pytest.fixture
def front_row(concert):
    return TicketTypeFactory(event=concert, name="Front row", price=6000, capacity=5, max_per_order=10, position=1)


def shop_url(event, **query):
    url = f"/e/{event.pk}/"
    if query:
        url += "?" + "&".join(f"{k}={v}" for k, v in query.items())
    return url


def buyer(**extra):
    data = {"buyer_name": "Ana García", "buyer_email": "ana@example.com", "dietary": "", "code": ""}
    data.update(extra)
    return data


def qty(ticket_type, n):
    return {f"qty_{ticket_type.pk}": str(n)}


def text_of(response) -> str:
    """The page's visible text, roughly: tags removed, whitespace collapsed."""
    return " ".join(re.sub(r"<[^>]+>", " ", response.content.decode()).split())


def assert_nothing_reserved(*ticket_types):
    for ticket_type in ticket_types:
        ticket_type.refresh_from_db()
        assert (ticket_type.sold, ticket_type.reserved) == (0, 0), ticket_type.name
    assert Order.objects.count() == 0


# --- What the page shows --------------------------------------------------------------------------


def test_shop_shows_the_event_in_its_time_zone_and_every_type_with_price_and_seats_left(client, concert, general):
    front_row = TicketTypeFactory(event=concert, name="Front row", price=6000, capacity=5, position=1)
    front_row.__class__.objects.filter(pk=front_row.pk).update(sold=5)

    response = client.get(shop_url(concert))

    assert response.status_code == 200
    page = text_of(response)
    assert "Demo Concert" in page
    assert "20:00 CEST" in page  # 18:00 UTC shown as the local 20:00, with the zone's label
    assert "Sala Apolo, Barcelona" in page and "Black tie optional" in page and "chamber music" in page
    assert "General €25.00 · 200 left" in page
    assert "Front row €60.00 · Sold out" in page
    html = response.content.decode()
    assert f'name="qty_{general.pk}"' in html
    # A sold-out type has no quantity to choose.
    assert f'name="qty_{front_row.pk}"' not in html
    assert 'max="10"' in html  # min(max per order 10, 200 left)


def test_quantity_offered_is_capped_by_the_seats_left(client, concert):
    almost_gone = TicketTypeFactory(event=concert, name="Balcony", capacity=3, max_per_order=10)
    almost_gone.__class__.objects.filter(pk=almost_gone.pk).update(sold=1)

    html = client.get(shop_url(concert)).content.decode()

    field = re.search(rf'<input[^>]*name="qty_{almost_gone.pk}"[^>]*>', html).group(0)
    assert 'max="2"' in field and 'min="0"' in field


def test_test_payment_mode_is_announced_on_the_shop(client, concert, general):
    page = text_of(client.get(shop_url(concert)))
    assert "Test payment mode — no real money" in page
    assert "Continue to test payment" in page
    assert "Your tickets are held for 30 minutes while you pay." in page


def test_shop_asks_for_names_and_the_events_questions(client, concert, general):
    Event.objects.filter(pk=concert.pk).update(
        attendee_names_required=True,
        questions=[
            {"key": "meal", "label": "Main course", "choices": ["Fish", "Vegetarian"]},
            {"key": "song", "label": "Song request", "choices": []},
        ],
    )

    html = client.get(shop_url(concert)).content.decode()

    # No quantity chosen yet: no name field, a word about where they appear, and never the old textarea.
    assert "a name field appears for each ticket" in html
    assert not re.search(r'name="attendee', html)
    assert re.search(r'<select[^>]*name="q_meal"', html) and '<option value="Vegetarian">' in html
    assert re.search(r'<input[^>]*name="q_song"', html)
    assert 'name="dietary"' in html


def test_names_are_not_asked_unless_the_organizer_wants_them(client, concert, general):
    html = client.post(shop_url(concert), buyer(update="1", **qty(general, 2))).content.decode()
    assert 'name="attendee_' not in html and "Name on each ticket" not in html


def test_shop_speaks_the_events_language(client, concert, general):
    Event.objects.filter(pk=concert.pk).update(language="es")
    assert '<html lang="es">' in client.get(shop_url(concert)).content.decode()
    client.cookies["django_language"] = "en"
    assert '<html lang="en">' in client.get(shop_url(concert)).content.decode()


def test_prices_are_written_the_way_the_pages_language_writes_them(client, concert, general):
    Event.objects.filter(pk=concert.pk).update(language="es")
    spanish = text_of(client.get(shop_url(concert)))
    assert "General 25,00 €" in spanish and "€25.00" not in spanish
    client.cookies["django_language"] = "en"
    english = text_of(client.get(shop_url(concert)))
    assert "General €25.00" in english and "25,00" not in english


@pytest.mark.parametrize(
    "make",
    [
        pytest.param(lambda tenant: TicketedEventFactory(tenant=tenant, status=Event.Status.DRAFT), id="draft"),
        pytest.param(lambda tenant: TicketedEventFactory(tenant=tenant, status=Event.Status.ARCHIVED), id="archived"),
        pytest.param(lambda tenant: EventFactory(tenant=tenant), id="invite-only"),
    ],
)
def test_shop_does_not_exist_for_events_not_on_public_sale(client, tenant, make):
    event = make(tenant)
    TicketTypeFactory(event=event, tenant=tenant)
    assert client.get(shop_url(event)).status_code == 404
    assert client.post(shop_url(event), buyer()).status_code == 404
    assert Order.objects.count() == 0


def test_shop_of_an_unknown_event_is_404(client, db):
    assert client.get("/e/00000000-0000-0000-0000-000000000000/").status_code == 404


# --- Buying ---------------------------------------------------------------------------------------


def test_posting_the_form_reserves_and_redirects_to_the_checkout_with_303(client, concert, general, front_row):
    response = client.post(shop_url(concert), buyer(**qty(general, 2), **qty(front_row, 1)))

    order = Order.objects.get()
    assert response.status_code == 303
    assert response["Location"] == order.checkout_url
    assert order.checkout_url.endswith(f"/orders/{order.pk}/{order.access_token}/test-checkout/")
    assert [(line["name"], line["quantity"]) for line in order.lines] == [("General", 2), ("Front row", 1)]
    assert (order.total, order.currency, order.buyer_email, order.is_test) == (11000, "eur", "ana@example.com", True)
    general.refresh_from_db()
    front_row.refresh_from_db()
    assert (general.reserved, front_row.reserved) == (2, 1)


def test_names_answers_and_dietary_needs_reach_the_order(client, concert, general):
    Event.objects.filter(pk=concert.pk).update(
        attendee_names_required=True, questions=[{"key": "meal", "label": "Main course", "choices": ["Fish", "Veg"]}]
    )

    response = client.post(
        shop_url(concert),
        buyer(**qty(general, 2), attendee_1="Ana García", attendee_2="  Ben Ruiz  ", dietary="No nuts", q_meal="Veg"),
    )

    assert response.status_code == 303
    order = Order.objects.get()
    assert [a["name"] for a in order.attendees] == ["Ana García", "Ben Ruiz"]
    assert (order.dietary, order.answers) == ("No nuts", {"meal": "Veg"})


def test_checkout_language_is_the_pages_language(client, concert, general):
    Event.objects.filter(pk=concert.pk).update(language="es")
    client.post(shop_url(concert), buyer(**qty(general, 1)))
    assert Order.objects.get().language == "es"


def test_sold_out_names_the_type_keeps_the_quantities_and_reserves_nothing(client, concert, general, front_row):
    response = client.post(shop_url(concert), buyer(**qty(general, 2), **qty(front_row, 6)))

    assert response.status_code == 409
    page = text_of(response)
    assert "Not enough tickets left. Nothing was reserved or charged." in page
    assert "Only 5 “Front row” tickets are left." in page
    assert response.context["sold_out"] == ["Only 5 “Front row” tickets are left."]  # General is not named
    html = response.content.decode()
    assert re.search(rf'name="qty_{front_row.pk}"[^>]*value="6"', html)
    assert re.search(rf'name="qty_{general.pk}"[^>]*value="2"', html)
    assert 'value="Ana García"' in html
    assert_nothing_reserved(general, front_row)


def test_type_sold_out_since_the_page_was_shown_is_named(client, concert, general, front_row):
    form_data = buyer(**qty(front_row, 1))
    front_row.__class__.objects.filter(pk=front_row.pk).update(sold=5)  # someone else bought the rest

    response = client.post(shop_url(concert), form_data)

    assert response.status_code == 409
    assert response.context["sold_out"] == ["“Front row” is sold out."]
    assert "Front row €60.00 · Sold out" in text_of(response)
    front_row.refresh_from_db()
    assert (front_row.sold, front_row.reserved, Order.objects.count()) == (5, 0, 0)


@pytest.mark.parametrize(
    ("data", "field", "message"),
    [
        pytest.param({"buyer_email": "ana@"}, "buyer_email", "Enter a valid email address.", id="bad-email"),
        pytest.param({"buyer_name": ""}, "buyer_name", "This field is required.", id="no-name"),
        pytest.param({"general": 0}, "__all__", "Choose at least one ticket.", id="no-tickets"),
        pytest.param({"general": 11}, "general", "At most 10 per order.", id="too-many-per-order"),
        pytest.param({"general": -1}, "general", "Choose 0 or more.", id="negative"),
        pytest.param({"general": "two"}, "general", "Enter a whole number.", id="not-a-number"),
    ],
)
def test_bad_input_is_shown_on_its_field_and_reserves_nothing(client, concert, general, data, field, message):
    quantity = data.pop("general", 2)
    response = client.post(shop_url(concert), buyer(**qty(general, quantity), **data))

    assert response.status_code == 400
    field_name = f"qty_{general.pk}" if field == "general" else field
    assert message in response.context["form"].errors[field_name]
    assert message in text_of(response)
    assert_nothing_reserved(general)


NAME_MISSING = "Enter the name of the person for this ticket."


def test_missing_attendee_names_are_errors_on_their_own_fields(client, concert, general, front_row):
    Event.objects.filter(pk=concert.pk).update(attendee_names_required=True)

    missing = client.post(shop_url(concert), buyer(**qty(general, 2), **qty(front_row, 1)))
    one_short = client.post(
        shop_url(concert), buyer(**qty(general, 2), **qty(front_row, 1), attendee_1="Ana García", attendee_3=" ")
    )

    assert missing.status_code == one_short.status_code == 400
    assert {name: missing.context["form"].errors.get(name) for name in ("attendee_1", "attendee_2", "attendee_3")} == {
        "attendee_1": [NAME_MISSING],
        "attendee_2": [NAME_MISSING],
        "attendee_3": [NAME_MISSING],
    }
    errors = one_short.context["form"].errors
    assert ("attendee_1" in errors, errors.get("attendee_2"), errors.get("attendee_3")) == (
        False,
        [NAME_MISSING],
        [NAME_MISSING],
    )
    # The page shows one labelled field per ticket, what was typed kept, the error beside the empty ones.
    html = one_short.content.decode()
    assert re.findall(r'<label for="id_attendee_(\d)">([^<]*)</label>', html) == [
        ("1", "Name on ticket 1 (General):"),
        ("2", "Name on ticket 2 (General):"),
        ("3", "Name on ticket 3 (Front row):"),
    ]
    assert re.search(r'<input[^>]*name="attendee_1"[^>]*value="Ana García"', html)
    assert text_of(one_short).count(NAME_MISSING) == 2
    assert_nothing_reserved(general, front_row)


def test_names_beyond_the_tickets_chosen_are_ignored_and_each_name_reaches_its_ticket(
    client, concert, general, front_row
):
    Event.objects.filter(pk=concert.pk).update(attendee_names_required=True)

    response = client.post(
        shop_url(concert),
        buyer(
            **qty(general, 1),
            **qty(front_row, 1),
            attendee_1="Ana García",
            attendee_2="Ben Ruiz",
            attendee_3="Nobody Else",
        ),
    )

    assert response.status_code == 303
    order = Order.objects.get()
    assert [(a["ticket_type"], a["name"]) for a in order.attendees] == [
        (str(general.pk), "Ana García"),
        (str(front_row.pk), "Ben Ruiz"),
    ]


def test_update_without_javascript_shows_the_total_and_a_name_field_per_ticket(client, concert, general, front_row):
    """The no-JavaScript path: choose quantities, "Update", then the names; nothing is reserved by updating."""
    Event.objects.filter(pk=concert.pk).update(attendee_names_required=True)

    response = client.post(
        shop_url(concert), buyer(update="1", **qty(general, 2), **qty(front_row, 1), attendee_1="Ana García")
    )

    assert response.status_code == 200
    html = response.content.decode()
    assert re.search(r"<output data-shop-total>€110.00</output>", html)
    assert re.findall(r'name="(attendee_\d+)"', html) == ["attendee_1", "attendee_2", "attendee_3"]
    assert re.search(r'<input[^>]*name="attendee_1"[^>]*value="Ana García"', html)
    assert re.search(rf'<input[^>]*name="qty_{general.pk}"[^>]*value="2"', html)
    assert 'class="errorlist' not in html  # nothing was checked yet
    assert Order.objects.count() == 0
    assert_nothing_reserved(general, front_row)


def test_the_total_is_shown_before_continue_for_the_quantities_posted(client, concert, general, front_row):
    response = client.post(shop_url(concert), buyer(**qty(general, 2), **qty(front_row, 1), buyer_email="ana@"))

    html = response.content.decode()
    assert response.status_code == 400
    assert html.index("€110.00</output>") < html.index("Continue to")
    assert "<output data-shop-total>—</output>" in client.get(shop_url(concert)).content.decode()


def test_service_validation_errors_land_on_the_form_fields(client, concert, general):
    """A name too long for a ticket (the service's limit too) is refused on its own field."""
    Event.objects.filter(pk=concert.pk).update(attendee_names_required=True)

    response = client.post(shop_url(concert), buyer(**qty(general, 1), attendee_1="A" * 201))

    assert response.status_code == 400
    assert response.context["form"].errors["attendee_1"] == [
        "Ensure this value has at most 200 characters (it has 201)."
    ]
    assert_nothing_reserved(general)


@pytest.mark.parametrize(
    ("names", "field"),
    [({"buyer_name": "Ana\nGarcía"}, "buyer_name"), ({"attendee_1": "Bea\u202eGil"}, "attendee_1")],
    ids=["buyer-name-with-a-line-break", "attendee-name-with-a-direction-mark"],
)
def test_a_name_with_control_characters_is_refused_on_its_field(client, concert, general, names, field):
    """The buyer's name becomes a guest's name and an export's cell: a line break or a direction mark in a name
    is refused on its field, and nothing is reserved."""
    Event.objects.filter(pk=concert.pk).update(attendee_names_required=True)

    response = client.post(shop_url(concert), buyer(**qty(general, 1), **{"attendee_1": "Bea Gil", **names}))

    assert response.status_code == 400
    assert "control characters" in " ".join(response.context["form"].errors[field])
    assert Order.objects.count() == 0
    assert_nothing_reserved(general)


def test_service_errors_without_a_field_are_shown_above_the_form(client, concert, general):
    TicketTypeFactory(event=concert, name="Dollar seats", currency="usd")
    dollars = concert.ticket_types.get(name="Dollar seats")

    response = client.post(shop_url(concert), buyer(**qty(general, 1), **qty(dollars, 1)))

    assert response.status_code == 400
    assert response.context["form"].non_field_errors() == ["Tickets in different currencies need separate orders."]
    assert "Tickets in different currencies need separate orders." in text_of(response)
    assert_nothing_reserved(general, dollars)


# --- Hidden ticket types --------------------------------------------------------------------------


@pytest.fixture
def crew(concert):
    return TicketTypeFactory(event=concert, name="Crew", price=1000, capacity=10, access_code="BACKSTAGE")


def test_hidden_type_is_listed_only_with_its_access_code(client, concert, general, crew):
    assert "Crew" not in text_of(client.get(shop_url(concert)))

    response = client.get(shop_url(concert, code="BACKSTAGE"))
    page = text_of(response)
    assert "Crew €10.00 · 10 left" in page and "Your access code unlocked more tickets." in page
    assert re.search(r'<input type="hidden" name="code" value="BACKSTAGE"', response.content.decode())


def test_access_code_carried_in_the_form_buys_the_hidden_type(client, concert, general, crew):
    response = client.post(shop_url(concert), buyer(code="BACKSTAGE", **qty(crew, 2)))

    assert response.status_code == 303
    assert Order.objects.get().lines[0]["name"] == "Crew"
    crew.refresh_from_db()
    assert crew.reserved == 2


def test_hidden_type_cannot_be_bought_without_its_code(client, concert, general, crew):
    response = client.post(shop_url(concert), buyer(**qty(crew, 2)))

    assert response.status_code == 400
    assert response.context["form"].non_field_errors() == ["Choose at least one ticket."]
    assert_nothing_reserved(crew)


def test_wrong_access_code_says_so(client, concert, general, crew):
    response = client.get(shop_url(concert, code="GUESS"))
    page = text_of(response)
    assert "This code does not unlock any tickets." in page and "Crew" not in page


# --- Payments off, throttling ----------------------------------------------------------------------


def test_without_any_payment_mode_the_shop_says_sales_are_closed_and_post_is_503(client, concert, general, settings):
    settings.TEST_PAYMENTS = False
    settings.STRIPE_SECRET_KEY = ""

    shown = client.get(shop_url(concert))
    assert shown.status_code == 200
    assert "Ticket sales are not open yet." in text_of(shown)
    assert "Test payment mode" not in text_of(shown)
    assert f'name="qty_{general.pk}"' not in shown.content.decode()

    response = client.post(shop_url(concert), buyer(**qty(general, 1)))
    assert response.status_code == 503
    assert "Ticket sales are not open yet: payments are not configured." in text_of(response)
    assert_nothing_reserved(general)


def test_payment_provider_failure_is_503_keeps_the_form_and_frees_the_seats(
    client, concert, general, settings, monkeypatch, caplog
):
    def provider_down(**kwargs):
        raise payments.PaymentProviderError("Stripe is down")

    monkeypatch.setattr(payments, "checkout_session_create", provider_down)

    response = client.post(shop_url(concert), buyer(**qty(general, 2)))

    assert response.status_code == 503
    assert "The payment provider is not answering; nothing was charged. Try again." in text_of(response)
    html = response.content.decode()
    assert re.search(rf'name="qty_{general.pk}"[^>]*value="2"', html) and 'value="Ana García"' in html
    general.refresh_from_db()
    assert (general.sold, general.reserved) == (0, 0)
    assert set(Order.objects.values_list("status", flat=True)) <= {Order.Status.CANCELLED}
    # The provider's failure is the warning to act on; the page answered as designed (no ERROR, no traceback).
    assert "Stripe is down" in caplog.text
    assert not [record for record in caplog.records if record.levelno >= logging.ERROR]


def test_checkout_attempts_are_throttled_per_client(client, concert, general, settings):
    # Counted per hour here: django-ratelimit's windows start on the clock, so a
    # per-minute window could roll over in the middle of the test.
    settings.TICKET_CHECKOUT_RATE_PER_CLIENT = "20/h"
    cache.clear()
    bad = buyer(buyer_email="not-an-email", **qty(general, 1))
    statuses = [client.post(shop_url(concert), bad).status_code for _ in range(20)]

    throttled = client.post(shop_url(concert), buyer(**qty(general, 1)))

    assert statuses == [400] * 20
    assert throttled.status_code == 429
    assert throttled["Retry-After"] == "60"
    assert "Too many attempts. Please wait a minute and try again." in text_of(throttled)
    assert_nothing_reserved(general)
    # Another address is not affected.
    assert client.post(shop_url(concert), buyer(**qty(general, 1)), REMOTE_ADDR="10.0.0.9").status_code == 303


def test_reading_the_shop_is_not_throttled(client, concert, general):
    assert {client.get(shop_url(concert)).status_code for _ in range(30)} == {200}


def test_sales_window_is_respected(client, concert, general):
    later = TicketTypeFactory(event=concert, name="Late bird", sales_start=timezone.now() + dt.timedelta(days=1))
    assert "Late bird" not in text_of(client.get(shop_url(concert)))
    assert client.post(shop_url(concert), buyer(**qty(later, 1))).status_code == 400
