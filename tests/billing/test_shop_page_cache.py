"""The shop page kept for a moment for visitors without a session (billing/shop_page_cache.py).

What must hold: the kept page is the page a fresh render gives (but for the CSRF tokens), each visitor's
token in it is their own and valid, nothing personal is ever kept or served from it, and whatever the
page may show late, checkout never acts on it.
"""

import re

import pytest
from django.core.cache import caches
from django.test import Client

from billing.models import Order
from events.models import TicketType
from tests.factories import TicketedEventFactory, TicketTypeFactory

pytestmark = pytest.mark.django_db

TOKEN = re.compile(r'name="csrfmiddlewaretoken" value="([^"]+)"')


@pytest.fixture(autouse=True)
def kept_pages(settings):
    settings.SHOP_PAGE_CACHE_SECONDS = 60  # long enough that no test sees a page expire by itself
    caches["pages"].clear()
    yield
    caches["pages"].clear()


@pytest.fixture
def concert(tenant):
    return TicketedEventFactory(tenant=tenant, name="Harbour concert", language="en")


@pytest.fixture
def stalls(concert):
    return TicketTypeFactory(event=concert, name="Stalls", price=4500, capacity=10, max_per_order=4)


def shop_url(event) -> str:
    return f"/e/{event.pk}/"


def visitor() -> Client:
    """Someone opening the shop's link: no cookies, CSRF checked as in production."""
    return Client(enforce_csrf_checks=True)


def tokens(response) -> list[str]:
    return TOKEN.findall(response.content.decode())


def without_tokens(response) -> str:
    return TOKEN.sub('name="csrfmiddlewaretoken" value=""', response.content.decode())


def order_form(page, ticket_type, quantity: int, n: int = 0) -> dict:
    """What a buyer sends from the shop page: the page's own CSRF token, a quantity, their name and email."""
    return {
        "csrfmiddlewaretoken": tokens(page)[-1],
        f"qty_{ticket_type.pk}": str(quantity),
        "buyer_name": f"Buyer {n}",
        "buyer_email": f"buyer{n}@example.com",
        "dietary": "",
        "code": "",
    }


def remaining(response, ticket_type) -> str:
    page = response.content.decode()
    article = page[page.index(f'data-ticket-type="{ticket_type.name}"') :]
    return re.search(r'data-testid="remaining">([^<]+)<', article).group(1)


def test_the_second_visitor_gets_the_first_visitors_page_without_a_query_and_with_a_token_of_their_own(
    concert, stalls, django_assert_num_queries
):
    first = visitor().get(shop_url(concert))
    with django_assert_num_queries(0):
        second_visitor = visitor()
        second = second_visitor.get(shop_url(concert))

    assert first.status_code == second.status_code == 200
    assert without_tokens(second) == without_tokens(first)
    assert len(tokens(second)) == len(tokens(first)) >= 2  # the language switcher's form and the shop's
    assert set(tokens(second)).isdisjoint(tokens(first))
    # The token works: the kept page's form starts a checkout for the second visitor.
    response = second_visitor.post(shop_url(concert), order_form(second, stalls, 2, n=2))
    assert response.status_code == 303, response.content.decode()[:500]
    assert Order.objects.get().buyer_email == "buyer2@example.com"


def test_a_token_from_the_kept_page_is_no_use_to_another_visitor(concert, stalls):
    visitor().get(shop_url(concert))
    ana, eve = visitor(), visitor()
    ana_token = tokens(ana.get(shop_url(concert)))[-1]
    eve.get(shop_url(concert))  # Eve has her own CSRF cookie, which Ana's token does not match

    response = eve.post(shop_url(concert), {"csrfmiddlewaretoken": ana_token, f"qty_{stalls.pk}": "1"})

    assert response.status_code == 403
    assert not Order.objects.exists()


def test_the_kept_page_is_what_a_fresh_render_gives_headers_included(concert, stalls, settings):
    visitor().get(shop_url(concert))
    kept = visitor().get(shop_url(concert))
    settings.SHOP_PAGE_CACHE_SECONDS = 0
    fresh = visitor().get(shop_url(concert))

    assert without_tokens(kept) == without_tokens(fresh)
    for header in ("Content-Type", "Vary", "Content-Language", "Content-Security-Policy", "X-Frame-Options"):
        assert kept.headers.get(header) == fresh.headers.get(header), header
    assert kept.cookies.keys() == fresh.cookies.keys() == {"csrftoken"}


def test_seats_left_may_be_a_moment_late_on_the_page_but_checkout_counts_them_now(concert, stalls):
    assert remaining(visitor().get(shop_url(concert)), stalls) == "10 left"
    TicketType.objects.filter(pk=stalls.pk).update(sold=10)  # sold out since

    buyer = visitor()
    page = buyer.get(shop_url(concert))
    assert remaining(page, stalls) == "10 left"  # kept
    response = buyer.post(shop_url(concert), order_form(page, stalls, 1))

    assert response.status_code == 409
    assert "sold out" in response.content.decode()
    assert not Order.objects.exists()
    caches["pages"].clear()  # what SHOP_PAGE_CACHE_SECONDS does in time
    assert 'data-testid="sold-out-badge"' in visitor().get(shop_url(concert)).content.decode()


def test_each_language_has_its_own_kept_page(concert, stalls):
    english = visitor().get(shop_url(concert))
    spanish_visitor = visitor()
    spanish_visitor.cookies["django_language"] = "es"
    spanish = spanish_visitor.get(shop_url(concert))
    again = visitor().get(shop_url(concert))

    assert '<html lang="en">' in english.content.decode()
    assert '<html lang="es">' in spanish.content.decode()
    assert without_tokens(again) == without_tokens(english)


@pytest.mark.parametrize(
    "how",
    ["query string", "session cookie", "message cookie"],
)
def test_requests_that_may_see_something_of_their_own_are_rendered_for_them(
    concert, stalls, how, django_assert_max_num_queries
):
    visitor().get(shop_url(concert))  # kept
    client, url = visitor(), shop_url(concert)
    if how == "query string":
        url += "?code=SECRET"
    elif how == "session cookie":
        client.cookies["sessionid"] = "whatever"
    else:
        client.cookies["messages"] = "whatever"

    with django_assert_max_num_queries(10) as captured:
        response = client.get(url)

    assert response.status_code == 200
    assert len(captured) >= 2  # the event and its ticket types, read for this request


def test_an_organizer_looking_at_their_shop_sees_it_as_it_is_now(concert, stalls, owner_client):
    visitor().get(shop_url(concert))  # kept for the public
    TicketType.objects.filter(pk=stalls.pk).update(sold=3)

    page = owner_client.get(shop_url(concert))

    assert remaining(page, stalls) == "7 left"
    assert "Log out" in page.content.decode()
    assert "Log out" not in visitor().get(shop_url(concert)).content.decode()  # nor is their page kept


def test_pages_that_are_not_the_shop_as_it_stands_are_never_kept(concert, stalls, django_assert_max_num_queries):
    missing = "/e/00000000-0000-4000-8000-000000000000/"
    assert visitor().get(missing).status_code == 404
    assert visitor().get(missing).status_code == 404
    # A POST (a checkout that failed validation) is rendered for its sender and not kept.
    poster = visitor()
    page = poster.get(shop_url(concert))
    response = poster.post(shop_url(concert), {"csrfmiddlewaretoken": tokens(page)[-1], f"qty_{stalls.pk}": "1"})
    assert response.status_code == 400
    assert "errorlist" not in visitor().get(shop_url(concert)).content.decode()


def test_off_means_every_visitor_gets_a_fresh_page(concert, stalls, settings, django_assert_max_num_queries):
    settings.SHOP_PAGE_CACHE_SECONDS = 0
    visitor().get(shop_url(concert))

    with django_assert_max_num_queries(10) as captured:
        visitor().get(shop_url(concert))

    assert len(captured) >= 2


@pytest.mark.django_db(transaction=True)
def test_thirty_visitors_at_once_each_buy_through_their_kept_page_and_no_seat_is_sold_twice(concert, settings):
    """A rush through the page: each visitor opens the shop (kept after the first) and sends its form with
    their own token. No CSRF refusal; as many orders as seats; the rest told it is sold out."""
    from tests.billing.test_concurrency import run_together

    settings.TICKET_CHECKOUT_RATE_PER_CLIENT = "1000/m"  # thirty buyers from one address (the test client's)
    seats = TicketTypeFactory(event=concert, name="Stalls", price=4500, capacity=10, max_per_order=4)
    visitor().get(shop_url(concert))  # the page every other visitor is served

    def buy(n: int) -> tuple[int, int]:
        client = visitor()
        page = client.get(shop_url(concert))
        response = client.post(shop_url(concert), order_form(page, seats, 1, n=n))
        return page.status_code, response.status_code

    outcomes = run_together([lambda n=n: buy(n) for n in range(30)])

    assert [o.error for o in outcomes if o.error] == []
    answers = sorted(o.value[1] for o in outcomes)
    assert {o.value[0] for o in outcomes} == {200}
    assert answers == [303] * 10 + [409] * 20
    seats.refresh_from_db()
    assert (seats.sold + seats.reserved, Order.objects.count()) == (10, 10)
