"""The organizer's billing pages: an event's orders, refunds, waitlist and check-in; the organization's Payments.

Under /o/<tenant_slug>/events/<event_id>/: TenantMiddleware has resolved the
organization and the member's role; every row is loaded through the tenant.
"""

import logging
from decimal import Decimal
from zoneinfo import ZoneInfo

from django.conf import settings
from django.contrib import messages
from django.core.exceptions import PermissionDenied, ValidationError
from django.core.paginator import Paginator
from django.db.models import prefetch_related_objects
from django.http import Http404
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils import formats, timezone
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy
from django.views.decorators.http import require_http_methods, require_POST, require_safe

from billing import exports, selectors, services
from billing import payments as payments_module
from billing.forms_organizer import CheckInForm, RefundForm
from billing.models import ATTENTION_STATUSES, Order, WaitlistEntry
from billing.views import order_lines
from events.models import TicketType
from events.selectors import ticketed_event_get
from eventsaas.dates import format_event_clock
from eventsaas.forms import add_service_errors
from eventsaas.money import money_format
from eventsaas.spreadsheets import (
    event_spreadsheet_response,
    export_filename,
    file_format_or_404,
    spreadsheet_response,
)
from eventsaas.tasks import TransientError
from guests.codes import normalize_code
from tenants.middleware import check_in_view

logger = logging.getLogger(__name__)

ORDERS_PAGE_SIZE = 50
ATTENTION = "attention"


def _order_of(request, event, order_id) -> Order:
    """The order of this event in this organization, else 404 (another tenant's order does not exist)."""
    order = selectors.order_get(tenant=request.tenant, order_id=order_id)
    if order is None or order.event_id != event.pk:
        raise Http404("No such order")
    return order


# --- Orders ---------------------------------------------------------------------------------------


def _status_filter(request) -> tuple[str, tuple[str, ...]]:
    """The order list's `status` choice and the statuses it shows (none: all); the page's and its export's."""
    status = request.GET.get("status", "")
    if status == ATTENTION:
        return status, tuple(ATTENTION_STATUSES)
    if status in Order.Status.values:
        return status, (status,)
    return "", ()


def order_list(request, event_id):
    event = ticketed_event_get(tenant=request.tenant, event_id=event_id)
    counts = selectors.order_status_counts(event=event)
    status, statuses = _status_filter(request)
    orders = selectors.order_list(event=event)
    if statuses:
        orders = orders.filter(status__in=statuses)
    page = Paginator(orders, ORDERS_PAGE_SIZE).get_page(request.GET.get("page"))
    for order in page:
        order.total_display = money_format(order.total, order.currency)
    filters = [
        {"value": "", "label": _("All"), "count": sum(counts.values())},
        {
            "value": ATTENTION,
            "label": _("Needing attention"),
            "count": sum(counts.get(s, 0) for s in ATTENTION_STATUSES),
        },
        *({"value": value, "label": label, "count": counts.get(value, 0)} for value, label in Order.Status.choices),
    ]
    context = {"event": event, "page": page, "status": status, "filters": filters}
    return render(request, "billing/organizer/order_list.html", context)


# --- Waitlist --------------------------------------------------------------------------------------


@require_safe
def waitlist(request, event_id):
    """Who waits for which ticket type, in line order: counts per type, then the entries (every status)."""
    event = ticketed_event_get(tenant=request.tenant, event_id=event_id)
    counts = selectors.waitlist_counts(event=event)
    types = [
        {"ticket_type": t, **counts.get(t.pk, {"waiting": 0, "offered": 0})}
        for t in TicketType.objects.for_tenant(request.tenant).filter(event_id=event.pk)
    ]
    status = request.GET.get("status", "")
    entries = selectors.waitlist_list(event=event)
    if status in WaitlistEntry.Status.values:
        entries = entries.filter(status=status)
    page = Paginator(entries, ORDERS_PAGE_SIZE).get_page(request.GET.get("page"))
    context = {
        "event": event,
        "types": types,
        "page": page,
        "status": status,
        "statuses": WaitlistEntry.Status.choices,
        "hold_minutes": settings.WAITLIST_OFFER_HOLD_MINUTES,
    }
    return render(request, "billing/organizer/waitlist.html", context)


# --- Exports ----------------------------------------------------------------------------------------
# Every member who can open the pages can download them (as guests/views.py's exports). A ticket's
# code lets its bearer in, and a file travels further than a page: only owners and admins get the
# codes in a file; viewers and door staff download the same list without them.


@require_safe
def order_export(request, event_id, file_format):
    """The orders as CSV or Excel, filtered by status as the page is (its query string)."""
    event = ticketed_event_get(tenant=request.tenant, event_id=event_id)
    chosen = file_format_or_404(file_format)
    _, statuses = _status_filter(request)
    return event_spreadsheet_response(
        exports.order_sheet(event=event, statuses=statuses), event=event, what="orders", file_format=chosen
    )


@require_safe
def check_in_export(request, event_id, file_format):
    """Every ticket with its check-in (when, by whom) as CSV or Excel."""
    event = ticketed_event_get(tenant=request.tenant, event_id=event_id)
    chosen = file_format_or_404(file_format)
    sheet = exports.ticket_sheet(event=event, include_codes=request.membership.can_edit)
    return event_spreadsheet_response(sheet, event=event, what="check-ins", file_format=chosen)


def _order_page(request, event, order, *, refund_form=None, status=200):
    tickets = selectors.order_tickets(order=order)
    prefetch_related_objects(tickets, "checked_in_by")
    ledger = selectors.order_ledger(order=order)
    for entry in ledger:
        entry.amount_display = money_format(entry.amount, entry.currency)
        entry.fee_display = money_format(entry.fee, entry.currency)
        entry.net_display = money_format(entry.net, entry.currency)
    type_names = {line["ticket_type"]: line["name"] for line in order.lines}
    lines = order_lines(order)
    attendees = [
        {"seat": seat, "name": attendee.get("name", ""), "ticket_type": type_names.get(attendee.get("ticket_type"), "")}
        for seat, attendee in enumerate(order.attendees, start=1)
    ]
    labels = {q["key"]: q["label"] for q in order.event.questions or []}
    answers = [(labels.get(key, key), value) for key, value in (order.answers or {}).items()]
    audit = selectors.order_history(order=order, tickets=tickets)
    for entry in audit:
        entry.label = ORDER_HISTORY_LABELS.get(entry.action, entry.action)
    can_refund = request.membership.can_edit and order.status in services.REFUNDABLE and order.refundable_amount > 0
    context = {
        "event": event,
        "order": order,
        "lines": lines,
        "attendees": attendees,
        "answers": answers,
        "tickets": tickets,
        "ledger": ledger,
        "audit": audit,
        "amounts": {
            "total": money_format(order.total, order.currency),
            "paid": money_format(order.paid_amount, order.currency),
            "refunded": money_format(order.refunded_amount, order.currency),
            "refundable": money_format(order.refundable_amount, order.currency),
            # What the ledger says now: the platform fee kept, and what the organizer keeps, after refunds.
            "fee": money_format(sum(entry.signed_fee for entry in ledger), order.currency),
            "net": money_format(sum(entry.signed_net for entry in ledger), order.currency),
        },
        "needs_attention": order.needs_attention,
        "can_refund": can_refund,
        "refund_form": refund_form or RefundForm(currency=order.currency),
    }
    return render(request, "billing/organizer/order_detail.html", context, status=status)


# The order page's history in words; an action without a label (a new one) shows its code.
ORDER_HISTORY_LABELS = {
    "order.created": gettext_lazy("Order placed"),
    "order.paid": gettext_lazy("Paid"),
    "order.expired": gettext_lazy("Expired"),
    "order.cancelled": gettext_lazy("Cancelled"),
    "order.refunded": gettext_lazy("Refund"),
    "order.refund_due": gettext_lazy("Needs a refund"),
    "order.amount_mismatch": gettext_lazy("Paid amount differs from the order"),
    "order.review_accepted": gettext_lazy("Review accepted"),
    "order.confirmation_resent": gettext_lazy("Tickets email sent again"),
    "ticket.checked_in": gettext_lazy("Ticket checked in"),
    "ticket.voided": gettext_lazy("Ticket voided"),
}


def order_detail(request, event_id, order_id):
    event = ticketed_event_get(tenant=request.tenant, event_id=event_id)
    return _order_page(request, event, _order_of(request, event, order_id))


@require_POST
def order_refund(request, event_id, order_id):
    """Refund all that is left, or the amount typed; Stripe's or the service's refusal shows on the field."""
    event = ticketed_event_get(tenant=request.tenant, event_id=event_id)
    order = _order_of(request, event, order_id)
    form = RefundForm(request.POST, currency=order.currency)
    if form.is_valid():
        try:
            refunded = services.order_refund(order=order, acting_user=request.user, amount=form.cleaned_data["amount"])
        except ValidationError as error:
            add_service_errors(form, error)
        else:
            messages.success(
                request,
                _("Refunded; %(amount)s refunded in total.")
                % {"amount": money_format(refunded.refunded_amount, refunded.currency)},
            )
            return redirect(
                "billing_organizer:order", tenant_slug=request.tenant.slug, event_id=event.pk, order_id=order.pk
            )
    order.refresh_from_db()
    return _order_page(request, event, order, refund_form=form, status=400)


@require_POST
def order_accept(request, event_id, order_id):
    """Accept a payment Stripe reported with another amount: the held seats are sold and tickets issued."""
    event = ticketed_event_get(tenant=request.tenant, event_id=event_id)
    order = _order_of(request, event, order_id)
    try:
        services.order_review_accept(order=order, acting_user=request.user)
    except ValidationError as error:
        messages.error(request, " ".join(error.messages))
    else:
        messages.success(request, _("Payment accepted; the tickets are issued and emailed."))
    return redirect("billing_organizer:order", tenant_slug=request.tenant.slug, event_id=event.pk, order_id=order.pk)


@require_POST
def order_resend(request, event_id, order_id):
    event = ticketed_event_get(tenant=request.tenant, event_id=event_id)
    order = _order_of(request, event, order_id)
    try:
        services.order_confirmation_resend(order=order, acting_user=request.user)
    except ValidationError as error:
        messages.error(request, " ".join(error.messages))
    else:
        messages.success(request, _("The tickets email is on its way to %(email)s.") % {"email": order.buyer_email})
    return redirect("billing_organizer:order", tenant_slug=request.tenant.slug, event_id=event.pk, order_id=order.pk)


# --- Check-in -------------------------------------------------------------------------------------


def _check_in_message(event, outcome: services.CheckInResult) -> str:
    ticket = outcome.ticket
    if ticket is None:  # "unknown": no ticket has this code
        return _("Unknown code")
    if outcome.result == "valid":
        name = ticket.attendee_name or ticket.order.buyer_name
        return _("Valid — %(type)s, %(name)s") % {"type": ticket.ticket_type.name, "name": name}
    if outcome.result == "already_checked_in":
        at = timezone.localtime(outcome.checked_in_at, event.tzinfo)
        time = format_event_clock(outcome.checked_in_at, event.tzinfo)
        if at.date() == timezone.localtime(timezone.now(), event.tzinfo).date():
            return _("Already checked in at %(time)s") % {"time": time}
        return _("Already checked in on %(date)s at %(time)s") % {
            "date": formats.date_format(at, "SHORT_DATE_FORMAT"),
            "time": time,
        }
    if outcome.result == "void":
        if ticket.order.status in {Order.Status.REFUNDED, Order.Status.PARTIALLY_REFUNDED}:
            return _("Void (refunded)")
        return _("Void")
    if outcome.result == "wrong_event":
        return _("Ticket of another event: %(event)s") % {"event": ticket.event.name}
    return _("Unknown code")


def _check_in_counts(event) -> dict:
    sales = selectors.sales_summary(event=event)
    return {"checked_in": sales.checked_in, "sold": sales.sold}


@check_in_view
@require_http_methods(["GET", "POST"])
def check_in(request, event_id):
    """The door: scan (a scanner types the code and Enter) or type a code; the answer is big and in words."""
    event = ticketed_event_get(tenant=request.tenant, event_id=event_id)
    outcome = message = None
    scanned = ""
    if request.method == "POST":
        form = CheckInForm(request.POST)
        if form.is_valid():
            scanned = normalize_code(form.cleaned_data["code"])
            outcome = services.ticket_check_in(event=event, code=scanned, acting_user=request.user)
            message = _check_in_message(event, outcome)
            # An empty field for the next scan; the answer stays on screen above it.
            form = CheckInForm()
    else:
        form = CheckInForm()
    context = {
        "event": event,
        "form": form,
        "outcome": outcome,
        "message": message,
        "scanned": "-".join(scanned[i : i + 4] for i in range(0, len(scanned), 4)),
        "counts": _check_in_counts(event),
    }
    return render(request, "billing/organizer/check_in.html", context, status=400 if form.errors else 200)


# --- Earnings ---------------------------------------------------------------------------------------
# The organization's money across its events, read from the ledger. Every member who can open the
# organization's pages reads it (as the orders' amounts); only the owners' and admins' actions change money.

EARNINGS_EXPORTS = {
    "events": ("earnings-by-event", exports.earnings_by_event_sheet),
    "months": ("earnings-by-month", exports.earnings_by_month_sheet),
}


def _money_display(totals: selectors.EarningsTotals) -> dict[str, str]:
    currency = totals.currency
    return {
        "currency": currency.upper(),
        "gross": money_format(totals.gross, currency),
        "fee": money_format(totals.fee, currency),
        "net": money_format(totals.net, currency),
        "refunded": money_format(totals.refunded, currency),
        "fee_refunded": money_format(totals.fee_refunded, currency),
        "net_after_refunds": money_format(totals.net_after_refunds, currency),
    }


def _fee_rate_display(rate: services.FeeRate, currencies: list[str]) -> str:
    """ "2.5 %" or "2.5 % + €0.30 per order": the percent exact from basis points, the fixed part in each currency."""
    percent = formats.number_format(Decimal(rate.basis_points) / 100, decimal_pos=2 if rate.basis_points % 100 else 0)
    if not rate.fixed:
        return _("%(percent)s %%") % {"percent": percent}
    fixed = " / ".join(money_format(rate.fixed, currency) for currency in currencies or ["eur"])
    return _("%(percent)s %% + %(fixed)s per order") % {"percent": percent, "fixed": fixed}


@require_safe
def earnings(request):
    result = selectors.earnings_for(tenant=request.tenant)
    context = {
        "timezone": result.timezone,
        "totals": [_money_display(t) for t in result.totals],
        "events": [{"row": row, "money": _money_display(row.totals)} for row in result.events],
        "periods": [
            {"label": formats.date_format(period.start, "YEAR_MONTH_FORMAT"), "money": _money_display(period.totals)}
            for period in result.periods
        ],
        "fee_rate_display": _fee_rate_display(
            services.platform_fee_rate(tenant=request.tenant), [t.currency for t in result.totals]
        ),
    }
    return render(request, "billing/organizer/earnings.html", context)


@require_safe
def earnings_export(request, what, file_format):
    """The earnings per event or per month as CSV or Excel, named after the organization."""
    if what not in EARNINGS_EXPORTS:
        raise Http404("No such export")
    chosen = file_format_or_404(file_format)
    name, sheet_of = EARNINGS_EXPORTS[what]
    result = selectors.earnings_for(tenant=request.tenant)
    filename = export_filename(stem=request.tenant.slug, what=name, file_format=chosen, tz=ZoneInfo(result.timezone))
    return spreadsheet_response(sheet_of(earnings=result), file_format=chosen, filename=filename)


# --- Payments: the organization's Stripe account (Connect) ----------------------------------------------------
# Owners and admins only: the account decides where ticket money goes. Viewers and door staff get a 403
# (TenantMiddleware already refuses their POSTs); another organization's slug is a 404 there too.


def _payments_editor(request) -> None:
    if not request.membership.can_edit:
        raise PermissionDenied(_("Only owners and admins can manage how the organization is paid."))


@require_safe
def payments(request):
    """The organization's Payments page: the state of its Stripe account and the way to (re)start onboarding."""
    _payments_editor(request)
    account = selectors.connected_account_get(tenant=request.tenant)
    context = {
        "account": account,
        "state": account.state if account is not None else "none",
        "returned": request.GET.get("returned") == "1",
        "payment_mode": payments_module.payment_mode(),
        "zone_name": timezone.get_current_timezone_name(),
    }
    return render(request, "billing/organizer/payments.html", context)


def _onboarding_redirect(request, *, resume: bool = False):
    """Send the organizer to a fresh onboarding link (Stripe's, or the simulated page), or back with why not."""
    back = redirect("billing_organizer:payments", tenant_slug=request.tenant.slug)
    if payments_module.payment_mode() == "off":
        messages.error(request, _("Payments are not configured on this server."))
        return back
    try:
        if resume:
            url = services.connect_onboarding_resume(tenant=request.tenant, site_url=settings.SITE_URL)
        else:
            url = services.connect_onboarding_start(
                tenant=request.tenant, acting_user=request.user, site_url=settings.SITE_URL
            )
    except (payments_module.PaymentProviderError, TransientError) as exc:
        logger.warning("Connect onboarding of %s failed: %s", request.tenant.slug, exc)
        messages.error(request, _("Stripe did not answer as expected; nothing changed. Try again in a moment."))
        return back
    if url is None:
        return back
    # 303: the browser follows with a GET.
    response = redirect(url)
    response.status_code = 303
    return response


@require_POST
def payments_onboarding(request):
    """Start or resume onboarding (POST with CSRF): creates the account once, then a new link each time."""
    _payments_editor(request)
    return _onboarding_redirect(request)


@require_safe
def payments_refresh(request):
    """Stripe's refresh_url (the link expired or was used): a new link for the same account, never a new account."""
    _payments_editor(request)
    return _onboarding_redirect(request, resume=True)


@require_safe
def payments_return(request):
    """Stripe's return_url: the organizer left onboarding. The state shown comes from webhooks, not this visit."""
    _payments_editor(request)
    return redirect(reverse("billing_organizer:payments", kwargs={"tenant_slug": request.tenant.slug}) + "?returned=1")


@require_http_methods(["GET", "POST"])
def payments_simulated_onboarding(request):
    """Test-payment mode's stand-in for Stripe's onboarding; 404 whenever that mode is off.

    Its button builds a signed account.updated and hands it to the Connect webhook code, as the test
    checkout does for payments.
    """
    _payments_editor(request)
    account = selectors.connected_account_get(tenant=request.tenant)
    if payments_module.payment_mode() != "test" or account is None or not account.is_test or not account.is_usable:
        raise Http404
    if request.method == "POST":
        completed = request.POST.get("action") == "complete"
        services.connect_simulate_onboarding(account=account, completed=completed)
        return redirect(
            reverse("billing_organizer:payments", kwargs={"tenant_slug": request.tenant.slug}) + "?returned=1"
        )
    return render(request, "billing/organizer/payments_simulated.html", {"account": account})
