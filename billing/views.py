"""Billing pages: the Stripe webhook endpoint and the buyer's order pages (no account needed)."""

import logging

import stripe
from django.http import Http404, HttpResponse, HttpResponseBadRequest
from django.shortcuts import redirect, render
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_http_methods, require_POST

from billing import payments, selectors, services
from billing.qr import qr_svg

logger = logging.getLogger(__name__)


@csrf_exempt
@require_POST
def stripe_webhook(request):
    """Verify, store, enqueue, answer: processing happens in a task, so Stripe gets its 2xx fast."""
    try:
        services.webhook_receive(payload=request.body, signature=request.headers.get("Stripe-Signature", ""))
    except (stripe.SignatureVerificationError, ValueError, KeyError, TypeError) as exc:
        logger.warning("Refused a Stripe webhook: %s", exc)
        return HttpResponseBadRequest("invalid signature or payload", content_type="text/plain")
    return HttpResponse(status=200)


def _buyer_order(order_id, token):
    order = selectors.order_for_buyer(order_id=order_id, token=token)
    if order is None:
        raise Http404
    return order


def order_page(request, order_id, token):
    order = _buyer_order(order_id, token)
    tickets = selectors.order_tickets(order=order) if order.is_paid else []
    return render(
        request,
        "billing/order.html",
        {
            "order": order,
            "event": order.event,
            "tickets": [(ticket, qr_svg(ticket.code)) for ticket in tickets],
            "total": services.money_format(order.total, order.currency),
            "waiting": order.status == order.Status.PENDING and request.GET.get("paid") == "1",
        },
    )


@require_http_methods(["GET", "POST"])
def order_cancel(request, order_id, token):
    """Stripe's cancel_url: the buyer left Checkout. A GET asks; the POST frees the seats."""
    order = _buyer_order(order_id, token)
    if request.method == "POST":
        services.order_cancel_by_buyer(order=order)
        return redirect(services.order_page_path(order))
    return render(request, "billing/order_cancel.html", {"order": order, "event": order.event})


@require_http_methods(["GET", "POST"])
def test_checkout(request, order_id, token):
    """Test-payment mode's stand-in for Stripe Checkout; 404 whenever that mode is off."""
    order = _buyer_order(order_id, token)
    if payments.payment_mode() != "test" or not order.is_test:
        raise Http404
    if request.method == "POST" and order.status == order.Status.PENDING:
        services.test_payment_complete(order=order, paid=request.POST.get("action") == "pay")
        return redirect(services.order_page_path(order) + "?paid=1")
    return render(
        request,
        "billing/test_checkout.html",
        {"order": order, "event": order.event, "total": services.money_format(order.total, order.currency)},
    )
