"""A member's count that is out of range gets one error that says why, not a second one asking for a count."""

import pytest

from tests.rsvp.household_form import household_post, row

ANSWER_URL = "/rsvp/answer/"


@pytest.fixture
def anna_client(client, anna):
    response = client.post("/rsvp/", {"code": anna.code, "last_name": "Müller"})
    assert response.status_code == 302
    return client


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("typed", "expected"),
    [("51", "less than or equal to 50"), ("-1", "greater than or equal to 0"), ("two", "Enter a whole number")],
)
def test_out_of_range_count_shows_only_its_own_error(anna_client, typed, expected):
    response = anna_client.post(ANSWER_URL, household_post(row("yes", typed), row("later")))

    assert response.status_code == 400
    errors = response.context["formset"].forms[0].errors["num_guests"]
    assert len(errors) == 1
    assert expected in errors[0]


@pytest.mark.django_db
def test_missing_count_still_asks_for_one(anna_client):
    response = anna_client.post(ANSWER_URL, household_post(row("yes", ""), row("later")))

    assert response.status_code == 400
    assert response.context["formset"].forms[0].errors["num_guests"] == [
        "Tell us how many people are coming (at least 1)."
    ]
