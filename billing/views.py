"""Billing pages: the Stripe webhook, the public ticket shop and the buyer's order pages (no account needed)."""

import functools
import logging
from dataclasses import dataclass, field
from datetime import timedelta

import stripe
from django.conf import settings
from django.contrib import messages
from django.core.exceptions import ValidationError
from django.http import Http404, HttpResponse, HttpResponseBadRequest, HttpResponseRedirect
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils import timezone, translation
from django.utils.translation import gettext as _
from django.utils.translation import ngettext
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_http_methods, require_POST, require_safe

from billing import payments, selectors, services
from billing.forms import ShopForm, WaitlistJoinForm, WaitlistOfferForm
from billing.qr import qr_svg
from billing.shop_page_cache import kept_for_the_public
from billing.throttling import RETRY_AFTER_SECONDS, checkout_is_throttled
from events import selectors as events_selectors
from events.selectors import event_on_sale
from events.throttling import ticket_types_for_visitor
from eventsaas.forms import add_service_errors
from eventsaas.i18n import visitor_language
from eventsaas.logs import answered_on_purpose
from eventsaas.money import money_format
from guests.notifications import rsvp_link

logger = logging.getLogger(__name__)


@csrf_exempt
@require_POST
def stripe_webhook(request):
    """Verify, store, enqueue, answer: processing happens in a task, so Stripe gets its 2xx fast."""
    return _webhook_response(request, services.webhook_receive)


@csrf_exempt
@require_POST
def stripe_connect_webhook(request):
    """The Connect endpoint (organizations' accounts): as stripe_webhook, verified with the Connect secret."""
    return _webhook_response(request, services.connect_webhook_receive)


def _webhook_response(request, receive) -> HttpResponse:
    try:
        receive(payload=request.body, signature=request.headers.get("Stripe-Signature", ""))
    except (stripe.SignatureVerificationError, ValueError, KeyError, TypeError) as exc:
        logger.warning("Refused a Stripe webhook at %s: %s", request.path, exc)
        return HttpResponseBadRequest("invalid signature or payload", content_type="text/plain")
    return HttpResponse(status=200)


# --- The shop -------------------------------------------------------------------------


def _sold_out_message(ticket_types) -> list[str]:
    """One sentence per type that lacked seats, with what is left now."""
    lines = []
    for ticket_type in ticket_types:
        if ticket_type.remaining == 0:
            lines.append(_("“%(name)s” is sold out.") % {"name": ticket_type.name})
        else:
            lines.append(
                ngettext(
                    "Only %(count)s “%(name)s” ticket is left.",
                    "Only %(count)s “%(name)s” tickets are left.",
                    ticket_type.remaining,
                )
                % {"count": ticket_type.remaining, "name": ticket_type.name}
            )
    return lines


@require_http_methods(["GET", "POST"])
@kept_for_the_public
def shop(request, event_id):
    """The public page of a ticketed event: what is on sale, and the form that starts checkout."""
    event = event_on_sale(event_id=event_id)
    language = visitor_language(request, event.language)
    with translation.override(language):
        return _shop_page(request, event, language)


def _shop_form(event, data, access_code: str, *, carried=None, types=None) -> ShopForm:
    """The shop's form: bound to a POST, or unbound with `carried` values (the "Update" button's), over
    `types`, or the types on sale now (read again after a sold-out answer)."""
    # Types whose free seats are held back for their waitlist come as sold out (billing.hooks).
    if types is None:
        types = events_selectors.ticket_types_for_sale(event=event, access_code=access_code)
    return ShopForm(
        data,
        ticket_types=types,
        questions=event.questions or [],
        names_required=event.attendee_names_required,
        initial={**(carried or {}), "code": access_code},
    )


@dataclass
class _CheckoutAttempt:
    """What a POST to the shop came to: the page again (form, status, why not) or the redirect to pay."""

    form: ShopForm
    status: int = 200
    sold_out: list[str] = field(default_factory=list)
    unavailable: str = ""
    redirect: HttpResponse | None = None


def _shop_checkout(request, event, language: str, form: ShopForm, access_code: str) -> _CheckoutAttempt:
    """Start checkout from the posted form: a 303 to Stripe Checkout, or why not."""
    if checkout_is_throttled(request):
        form.is_valid()
        form.add_error(None, _("Too many attempts. Please wait a minute and try again."))
        return _CheckoutAttempt(form, status=429)
    if not form.is_valid():
        return _CheckoutAttempt(form, status=400)
    try:
        order = services.checkout_start(event=event, request=form.checkout_request(language=language))
    except services.SoldOut as exc:
        sold_out = _sold_out_message(exc.ticket_types)
        # The remaining counts changed under the buyer: show them as they are now, quantities kept.
        form = _shop_form(event, request.POST, access_code)
        form.is_valid()
        return _CheckoutAttempt(form, status=409, sold_out=sold_out)
    except services.PaymentsUnavailable as exc:
        return _CheckoutAttempt(form, status=503, unavailable=str(exc))
    except ValidationError as exc:
        add_service_errors(form, exc)
        return _CheckoutAttempt(form, status=400)
    # 303: the browser follows with a GET, so going back never sends the form twice. A free
    # registration is complete already: straight to the order page with its tickets.
    response = HttpResponseRedirect(order.checkout_url or services.order_page_path(order))
    response.status_code = 303
    return _CheckoutAttempt(form, redirect=response)


def _shop_page(request, event, language, *, waitlist_form: WaitlistJoinForm | None = None, status: int = 200):
    # A waitlist join with errors shows the shop as it is, with that form's messages; any other POST is the shop's.
    shop_post = request.method == "POST" and waitlist_form is None
    data = request.POST if shop_post else None
    code_source = waitlist_form.data if waitlist_form is not None else (data or request.GET)
    visitor = ticket_types_for_visitor(request, event=event, access_code=(code_source.get("code") or "").strip()[:40])
    access_code, codes_throttled = visitor.access_code, visitor.refused
    if codes_throttled:  # the page without what the code would unlock (events/throttling.py)
        status = 429
    attempt = _CheckoutAttempt(_shop_form(event, data, access_code, types=visitor.ticket_types), status=status)
    mode = payments.payment_mode()
    if shop_post and "update" in request.POST:
        # Without JavaScript, "Update" shows the total and a name field per ticket for the quantities chosen:
        # the same page with what was typed, nothing checked or reserved yet.
        carried = {key: value for key, value in request.POST.items() if key != "csrfmiddlewaretoken"}
        attempt = _CheckoutAttempt(_shop_form(event, None, access_code, carried=carried, types=visitor.ticket_types))
    elif shop_post:
        attempt = _shop_checkout(request, event, language, attempt.form, access_code)
        if attempt.redirect is not None:
            return attempt.redirect
    form = attempt.form
    # Paid types wait for the organization's Stripe account to take charges; free ones sell meanwhile.
    awaiting_payments = any(t.price > 0 for t in form.ticket_types) and (
        selectors.account_id_for_charges(tenant_id=event.tenant_id) is None
    )
    for ticket_type in form.ticket_types:
        # With payments off only free types can be chosen (free registration needs no payment).
        ticket_type.awaiting_payments = (awaiting_payments or mode == "off") and ticket_type.price > 0
        # A join with errors shows them (and what was typed) under its own type.
        mine = waitlist_form is not None and waitlist_form.data.get("ticket_type") == str(ticket_type.pk)
        ticket_type.waitlist_form = waitlist_form if mine else None
    hidden_unlocked = any(t.access_code for t in form.ticket_types)
    # Free tickets need no payment: they are open in every payment mode, "off" included.
    free_only = bool(form.ticket_types) and all(not t.price for t in form.ticket_types)
    any_free = any(not t.price and not t.is_sold_out for t in form.ticket_types)
    if mode == "off" and not attempt.unavailable and not free_only:
        attempt.unavailable = (
            _("Paid tickets are not on sale yet: payments are not configured.")
            if any_free
            else _("Ticket sales are not open yet.")
        )
    context = {
        "event": event,
        "form": form,
        "payment_mode": mode,
        "sold_out": attempt.sold_out,
        # Off: no way to pay, so no form unless some tickets are free. A provider failure keeps the form.
        "sales_closed": mode == "off" and not any_free,
        "unavailable": attempt.unavailable,
        "free_only": free_only,
        "access_code": access_code,
        "hidden_unlocked": hidden_unlocked,
        "code_rejected": bool(access_code) and not hidden_unlocked,
        "codes_throttled": codes_throttled,
        "any_available": any(not t.is_sold_out and not t.awaiting_payments for t in form.ticket_types),
        # With payments off the notice above the form says why paid types wait (`unavailable`).
        "awaiting_payments": awaiting_payments and mode != "off",
        "hold_minutes": settings.ORDER_HOLD_MINUTES,
        "waitlist_form": waitlist_form,
        "waitlist_hold_minutes": settings.WAITLIST_OFFER_HOLD_MINUTES,
    }
    response = render(request, "billing/shop.html", context, status=attempt.status)
    if attempt.status == 429:
        response["Retry-After"] = str(RETRY_AFTER_SECONDS)
    if attempt.unavailable and attempt.status == 503:
        answered_on_purpose(response)  # the provider's failure is logged where it was found
    return response


# --- The waitlist ---------------------------------------------------------------------


@require_POST
def waitlist_join(request, event_id):
    """Join the waitlist of a sold-out type from the shop: a 303 to the entry's page, or the shop with errors."""
    event = event_on_sale(event_id=event_id)
    language = visitor_language(request, event.language)
    with translation.override(language):
        form = WaitlistJoinForm(request.POST)
        if checkout_is_throttled(request):
            form.is_valid()
            form.add_error(None, _("Too many attempts. Please wait a minute and try again."))
            response = _shop_page(request, event, language, waitlist_form=form, status=429)
            response["Retry-After"] = str(RETRY_AFTER_SECONDS)
            return response
        if not form.is_valid():
            return _shop_page(request, event, language, waitlist_form=form, status=400)
        try:
            entry = services.waitlist_join(
                event=event,
                ticket_type_id=form.cleaned_data["ticket_type"],
                email=form.cleaned_data["email"],
                name=form.cleaned_data["name"],
                language=language,
                access_code=form.cleaned_data["code"],
            )
        except ValidationError as exc:
            add_service_errors(form, exc)
            return _shop_page(request, event, language, waitlist_form=form, status=400)
    messages.success(request, _("You are on the waitlist. Keep this page's address to leave the waitlist later."))
    return redirect(services.waitlist_entry_path(entry))


@require_http_methods(["GET", "POST"])
def waitlist_entry(request, entry_id, token):
    """The entry's page: its place, its offer, the way out. Reached with the joiner's link (kept for the
    entry's life) or the offer email's link; only the latter can buy the held seat (docs/waitlist.md)."""
    entry = selectors.waitlist_entry_for_buyer(entry_id=entry_id, token=token)
    if entry is None:
        raise Http404
    can_buy = selectors.waitlist_link_is_offer(entry=entry, token=token)
    event = entry.event
    language = visitor_language(request, entry.language or event.language)
    with translation.override(language):
        form = WaitlistOfferForm(request.POST if request.POST.get("action") == "buy" else None)
        status, unavailable = 200, ""
        if request.method == "POST" and request.POST.get("action") == "leave":
            if services.waitlist_leave(entry=entry):
                messages.success(request, _("You have left the waitlist."))
            return redirect(request.path)
        if request.method == "POST" and request.POST.get("action") == "buy":
            if not can_buy:
                form.is_valid()
                form.add_error(None, _("To buy the held seat, open the link in the offer email."))
                status = 403
            elif checkout_is_throttled(request):
                form.is_valid()
                form.add_error(None, _("Too many attempts. Please wait a minute and try again."))
                status = 429
            elif not form.is_valid():
                status = 400
            else:
                try:
                    order = services.checkout_start_from_offer(
                        entry=entry,
                        token=token,
                        request=services.CheckoutRequest(
                            items=[],
                            buyer_name=form.cleaned_data["buyer_name"],
                            buyer_email=entry.email,
                            language=language,
                        ),
                    )
                except services.PaymentsUnavailable as exc:
                    status, unavailable = 503, str(exc)
                except ValidationError as exc:
                    add_service_errors(form, exc)
                    status = 400
                    entry.refresh_from_db()
                else:
                    response = HttpResponseRedirect(order.checkout_url)
                    response.status_code = 303
                    return response
        context = {
            "entry": entry,
            "event": event,
            "ticket_type": entry.ticket_type,
            "price": money_format(entry.ticket_type.price, entry.ticket_type.currency),
            "form": form,
            "unavailable": unavailable,
            "is_live_offer": entry.status == entry.Status.OFFERED
            and entry.offer_expires_at is not None
            and entry.offer_expires_at > timezone.now(),
            "can_buy": can_buy,
            "payment_mode": payments.payment_mode(),
        }
        response = render(request, "billing/waitlist_entry.html", context, status=status)
    if status == 429:
        response["Retry-After"] = str(RETRY_AFTER_SECONDS)
    return response


# --- The buyer's order ----------------------------------------------------------------


def _buyer_order(order_id, token):
    order = selectors.order_for_buyer(order_id=order_id, token=token)
    if order is None:
        raise Http404
    return order


def _in_order_language(view):
    """Render a buyer page in the language the order was placed in (the switcher's choice wins)."""

    @functools.wraps(view)
    def wrapper(request, order_id, token):
        order = _buyer_order(order_id, token)
        with translation.override(visitor_language(request, order.language or order.event.language)):
            return view(request, order)

    return wrapper


def order_lines(order) -> list[dict]:
    """The order's lines with their amounts as text, for the buyer's and the organizer's pages."""
    return [
        {
            "name": line["name"],
            "quantity": line["quantity"],
            "unit_price": money_format(line["unit_price"], order.currency),
            "amount": money_format(line["quantity"] * line["unit_price"], order.currency),
        }
        for line in order.lines
    ]


@require_safe
@_in_order_language
def order_page(request, order):
    """The buyer's order: summary, status in words and, once paid, the tickets with their QR codes."""
    tickets = selectors.order_tickets(order=order)
    holder = selectors.order_holder(order=order)
    # After paying, the webhook may still be on its way: refresh until it lands or the order's hold ends.
    waiting = (
        order.status == order.Status.PENDING
        and request.GET.get("paid") == "1"
        and timezone.now() < order.expires_at + timedelta(seconds=settings.ORDER_EXPIRY_GRACE_SECONDS)
    )
    response = render(
        request,
        "billing/order.html",
        {
            "order": order,
            "event": order.event,
            "lines": order_lines(order),
            "tickets": [(ticket, qr_svg(ticket.code) if ticket.is_valid else "") for ticket in tickets],
            "total": money_format(order.total, order.currency),
            "refunded": money_format(order.refunded_amount, order.currency),
            "waiting": waiting,
            "cancel_url": services.order_cancel_path(order),
            # The buyer is a guest of the event once the tickets are issued (billing.services.holders).
            "holder": holder,
            "guest_login_url": rsvp_link(holder) if holder else "",
            "shop_url": _shop_url_to_try_again(order),
        },
    )
    if waiting:
        response["Refresh"] = "3"
    return response


def _shop_url_to_try_again(order) -> str:
    """The shop's address under an order that ended unpaid, while the event still sells; else ""."""
    if order.status not in (order.Status.EXPIRED, order.Status.CANCELLED):
        return ""
    event = order.event
    if not event.is_on_sale or event.has_ended():
        return ""
    return reverse("billing:shop", kwargs={"event_id": event.pk})


@require_http_methods(["GET", "POST"])
@_in_order_language
def order_cancel(request, order):
    """Stripe's cancel_url: the buyer left Checkout. A GET asks; the POST frees the seats."""
    if request.method == "POST":
        if services.order_cancel_by_buyer(order=order):
            messages.success(request, _("Your order is cancelled and the seats are free again. Nothing was charged."))
        return redirect(services.order_page_path(order))
    return render(
        request,
        "billing/order_cancel.html",
        {
            "order": order,
            "event": order.event,
            "lines": order_lines(order),
            "total": money_format(order.total, order.currency),
            "order_url": services.order_page_path(order),
        },
    )


@require_http_methods(["GET", "POST"])
@_in_order_language
def test_checkout(request, order):
    """Test-payment mode's stand-in for Stripe Checkout; 404 whenever that mode is off."""
    if payments.payment_mode() != "test" or not order.is_test:
        raise Http404
    if request.method == "POST" and order.status == order.Status.PENDING:
        paid = request.POST.get("action") == "pay"
        services.order_simulate_payment(order=order, paid=paid)
        return redirect(services.order_page_path(order) + ("?paid=1" if paid else ""))
    return render(
        request,
        "billing/test_checkout.html",
        {
            "order": order,
            "event": order.event,
            "lines": order_lines(order),
            "total": money_format(order.total, order.currency),
            "order_url": services.order_page_path(order),
            "cancel_url": services.order_cancel_path(order),
        },
    )
