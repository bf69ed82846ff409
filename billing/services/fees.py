"""The platform's application fee: what it takes from an order, and what it gives back with a refund.

All integer arithmetic on minor units, no floats. The rules (docs/payments.md, "Platform fee"):

- fee of an order = round_half_up(total x basis points / 10,000) + fixed, capped at the total; 0 for a free order
  and for an order without a destination account (the platform keeps the whole charge then, as before Connect);
- Stripe refunds the application fee in proportion to the amount refunded. To make that exact over any number of
  partial refunds, the fee given back is cumulative: after refunds totalling R of a charge A, the fee given back in
  all is round_half_up(fee x R / A), and one refund gives back the difference that refund makes to that number.
  The parts never go negative, never exceed the fee, and a full refund gives back exactly the fee.
  The local Stripe server (tests/support/stripe_server.py) applies the same rule, so the tests compare the two.
"""

from dataclasses import dataclass

from django.conf import settings

from tenants.models import Tenant

BASIS_POINTS_PER_WHOLE = 10_000


@dataclass(frozen=True)
class FeeRate:
    basis_points: int  # 250 = 2.5 %
    fixed: int  # minor units of the order's currency


def _round_half_up_div(numerator: int, denominator: int) -> int:
    """numerator / denominator rounded to the nearest integer, halves up (both non-negative)."""
    return (2 * numerator + denominator) // (2 * denominator)


def platform_fee_rate(*, tenant: Tenant) -> FeeRate:
    """The organization's rate: staff's override field by field, else the platform's default setting."""
    basis_points = tenant.platform_fee_basis_points
    fixed = tenant.platform_fee_fixed
    return FeeRate(
        basis_points=settings.PLATFORM_FEE_BASIS_POINTS if basis_points is None else basis_points,
        fixed=settings.PLATFORM_FEE_FIXED if fixed is None else fixed,
    )


def application_fee_for(*, total: int, rate: FeeRate) -> int:
    """The fee on an order of `total` minor units: percent (half up) plus fixed, at most the total, 0 if free."""
    if total <= 0:
        return 0
    percent_part = _round_half_up_div(total * rate.basis_points, BASIS_POINTS_PER_WHOLE)
    return min(percent_part + rate.fixed, total)


def fee_refunded_after(*, fee: int, charged: int, refunded: int) -> int:
    """The fee given back in all once `refunded` of a `charged` payment is refunded (half up, exact at the end)."""
    if charged <= 0 or fee <= 0:
        return 0
    refunded = max(0, min(refunded, charged))
    return _round_half_up_div(fee * refunded, charged)


def fee_refund_for(*, fee: int, charged: int, refunded_before: int, amount: int) -> int:
    """The part of the fee one refund of `amount` gives back, after `refunded_before` was refunded already."""
    return fee_refunded_after(fee=fee, charged=charged, refunded=refunded_before + amount) - fee_refunded_after(
        fee=fee, charged=charged, refunded=refunded_before
    )
