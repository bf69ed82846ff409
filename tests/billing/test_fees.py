"""The platform fee's arithmetic: the setting read exactly, an order's fee (half up, fixed part, cap, free), the
organization's override, and the proportional fee refund that sums exactly to the fee over any partial refunds."""

import pytest
from django.core.exceptions import ImproperlyConfigured
from hypothesis import given
from hypothesis import strategies as st

from billing.services.fees import (
    FeeRate,
    application_fee_for,
    fee_refund_for,
    fee_refunded_after,
    platform_fee_rate,
)
from eventsaas.env import env_percent_basis_points, percent_to_basis_points
from tests.factories import TenantFactory


@pytest.mark.parametrize(
    ("text", "basis_points"),
    [("2.5", 250), ("2.50", 250), ("0", 0), ("0.01", 1), ("100", 10_000), (" 7 ", 700), ("12.34", 1234), ("4.35", 435)],
)
def test_percent_setting_is_read_exactly_as_basis_points(text, basis_points):
    assert percent_to_basis_points(text) == basis_points


@pytest.mark.parametrize("text", ["", "2.555", "1e2", "-1", "100.01", "101", "2,5", "abc", ".5", "5.", "NaN", "²"])
def test_percent_setting_refuses_nonsense(text):
    with pytest.raises(ValueError):
        percent_to_basis_points(text)


def test_a_nonsense_percent_stops_the_start(monkeypatch):
    monkeypatch.setenv("PLATFORM_FEE_PERCENT", "250")
    with pytest.raises(ImproperlyConfigured, match="PLATFORM_FEE_PERCENT"):
        env_percent_basis_points("PLATFORM_FEE_PERCENT", "2.5")


@pytest.mark.parametrize(
    ("total", "basis_points", "fixed", "fee"),
    [
        (10_000, 250, 0, 250),  # 2.5 % of 100.00
        (2_500, 250, 30, 93),  # 62.5 rounds half up to 63, plus 30
        (2_499, 250, 0, 62),  # 62.475 rounds down
        (20, 250, 0, 1),  # 0.5 rounds up
        (19, 250, 0, 0),  # 0.475 rounds down
        (100, 0, 30, 30),  # fixed only
        (25, 250, 30, 25),  # capped at the total
        (100, 10_000, 0, 100),  # 100 %
        (0, 250, 30, 0),  # a free order pays no fee, not even the fixed part
    ],
)
def test_application_fee_rounds_half_up_adds_fixed_and_is_capped(total, basis_points, fixed, fee):
    assert application_fee_for(total=total, rate=FeeRate(basis_points=basis_points, fixed=fixed)) == fee


@pytest.mark.django_db
def test_organization_override_wins_field_by_field_over_the_default(settings):
    settings.PLATFORM_FEE_BASIS_POINTS, settings.PLATFORM_FEE_FIXED = 250, 30
    assert platform_fee_rate(tenant=TenantFactory()) == FeeRate(250, 30)
    assert platform_fee_rate(tenant=TenantFactory(platform_fee_basis_points=100)) == FeeRate(100, 30)
    assert platform_fee_rate(tenant=TenantFactory(platform_fee_fixed=0)) == FeeRate(250, 0)
    assert platform_fee_rate(tenant=TenantFactory(platform_fee_basis_points=0, platform_fee_fixed=0)) == FeeRate(0, 0)


def test_fee_refunds_of_three_partial_refunds_sum_exactly_to_the_fee():
    fee, charged = 93, 2_500  # 2.5 % + 0.30 of 25.00
    parts, refunded = [], 0
    for amount in (1_000, 1_000, 500):
        parts.append(fee_refund_for(fee=fee, charged=charged, refunded_before=refunded, amount=amount))
        refunded += amount
    # 37.2 -> 37, 74.4 -> 74 (37 more), 93 (19 more): each a fair share, together the whole fee.
    assert parts == [37, 37, 19]
    assert sum(parts) == fee


def test_no_fee_no_fee_refund():
    assert fee_refund_for(fee=0, charged=2_500, refunded_before=0, amount=2_500) == 0
    assert fee_refunded_after(fee=10, charged=0, refunded=0) == 0


@given(
    charged=st.integers(min_value=1, max_value=10**8),
    fee_share=st.floats(min_value=0, max_value=1),
    cuts=st.lists(st.floats(min_value=0, max_value=1), max_size=12),
)
def test_any_sequence_of_partial_refunds_keeps_the_fee_refund_in_bounds_and_exact_at_the_end(charged, fee_share, cuts):
    fee = int(charged * fee_share)  # floats only to draw the example; the rule itself is integers
    points = sorted({int(charged * c) for c in cuts} | {charged})
    refunded, given_back = 0, 0
    for point in points:
        amount = point - refunded
        if amount <= 0:
            continue
        part = fee_refund_for(fee=fee, charged=charged, refunded_before=refunded, amount=amount)
        assert 0 <= part <= amount
        given_back += part
        refunded = point
        assert 0 <= given_back <= fee
        assert given_back == fee_refunded_after(fee=fee, charged=charged, refunded=refunded)
    assert given_back == fee
