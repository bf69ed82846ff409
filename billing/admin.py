"""Staff views of orders, tickets, the money ledger, organizations' Stripe accounts and Stripe webhook events.

Money, seats and states change only through billing.services (compare-and-set
updates with an audit record), so the admin shows them read-only: staff can fix
a buyer's name or email, never an amount, a status or the ledger.
"""

import json
import uuid

from django.contrib import admin, messages
from django.utils.html import format_html
from django.utils.translation import gettext_lazy as _
from django.utils.translation import ngettext

from billing.models import ConnectedAccount, LedgerEntry, Order, Ticket, WebhookEvent
from billing.tasks import webhook_event_process_task
from eventsaas.admin import ReadOnlyAdminMixin
from eventsaas.money import money_format
from eventsaas.tasks import enqueue_on_commit
from guests.codes import normalize_code


class ReadOnlyInline(admin.TabularInline):
    extra = 0
    can_delete = False
    show_change_link = True

    def has_add_permission(self, request, obj=None):
        return False

    def has_change_permission(self, request, obj=None):
        return False


class TicketInline(ReadOnlyInline):
    model = Ticket
    fields = ("seat", "display_code", "ticket_type", "attendee_name", "status", "checked_in_at", "checked_in_by")
    readonly_fields = fields
    ordering = ["seat"]

    def get_queryset(self, request):
        # Each row shows its ticket type and door person: one query for the order, not one per ticket.
        return super().get_queryset(request).select_related("ticket_type", "checked_in_by")

    @admin.display(description=_("code"))
    def display_code(self, obj):
        return obj.display_code


class LedgerEntryInline(ReadOnlyInline):
    model = LedgerEntry
    fields = ("created_at", "kind", "amount_display", "stripe_object_id")
    readonly_fields = fields
    show_change_link = False

    @admin.display(description=_("amount"))
    def amount_display(self, obj):
        return money_format(obj.amount, obj.currency)


class UuidSearchMixin:
    """Find rows by a pasted UUID with an exact lookup: admin's "=field" search is a pattern (iexact)
    lookup on UUID fields, which MongoDB cannot run."""

    uuid_search_fields: list[str] = []

    def get_search_results(self, request, queryset, search_term):
        found, may_have_duplicates = super().get_search_results(request, queryset, search_term)
        try:
            value = uuid.UUID(search_term.strip())
        except ValueError:
            return found, may_have_duplicates
        for name in self.uuid_search_fields:
            found |= queryset.filter(**{name: value})
        return found, may_have_duplicates


def _json(value) -> str:
    return format_html("<pre>{}</pre>", json.dumps(value, indent=2, ensure_ascii=False, default=str))


@admin.register(Order)
class OrderAdmin(UuidSearchMixin, admin.ModelAdmin):
    list_display = [
        "created_at",
        "buyer_name",
        "buyer_email",
        "event",
        "tenant",
        "status",
        "total_display",
        "is_test",
    ]
    list_filter = ["status", "attention", "is_test"]
    search_fields = ["buyer_email", "buyer_name", "stripe_session_id", "stripe_payment_intent_id", "tenant__name"]
    uuid_search_fields = ["pk"]
    list_select_related = ["event", "tenant"]
    date_hierarchy = "created_at"
    inlines = [TicketInline, LedgerEntryInline]
    fieldsets = [
        (None, {"fields": ["tenant", "event", "status", "attention", "is_test", "language"]}),
        (_("Buyer"), {"fields": ["buyer_name", "buyer_email", "dietary", "answers_display"]}),
        (
            _("Money"),
            {"fields": ["total_display", "paid_display", "refunded_display", "lines_display", "attendees_display"]},
        ),
        (_("Stripe"), {"fields": ["stripe_session_id", "stripe_payment_intent_id", "checkout_url"]}),
        (
            _("Dates"),
            {
                "fields": [
                    "created_at",
                    "expires_at",
                    "paid_at",
                    "closed_at",
                    "confirmation_claimed_at",
                    "confirmation_sent_at",
                ]
            },
        ),
    ]
    # Everything but the buyer's contact details: amounts, states and ids belong to the services.
    readonly_fields = [
        "tenant",
        "event",
        "status",
        "attention",
        "is_test",
        "language",
        "answers_display",
        "total_display",
        "paid_display",
        "refunded_display",
        "lines_display",
        "attendees_display",
        "stripe_session_id",
        "stripe_payment_intent_id",
        "checkout_url",
        "created_at",
        "expires_at",
        "paid_at",
        "closed_at",
        "confirmation_claimed_at",
        "confirmation_sent_at",
    ]

    def has_add_permission(self, request):
        return False  # orders come from checkout only

    def has_delete_permission(self, request, obj=None):
        return False  # deleting one would delete its ledger entries, which are append-only

    @admin.display(description=_("total"), ordering="total")
    def total_display(self, obj):
        return money_format(obj.total, obj.currency)

    @admin.display(description=_("paid"))
    def paid_display(self, obj):
        return money_format(obj.paid_amount, obj.currency)

    @admin.display(description=_("refunded"))
    def refunded_display(self, obj):
        return money_format(obj.refunded_amount, obj.currency)

    @admin.display(description=_("lines"))
    def lines_display(self, obj):
        return _json(obj.lines)

    @admin.display(description=_("attendees"))
    def attendees_display(self, obj):
        return _json(obj.attendees)

    @admin.display(description=_("answers"))
    def answers_display(self, obj):
        return _json(obj.answers)


@admin.register(Ticket)
class TicketAdmin(admin.ModelAdmin):
    list_display = ["display_code", "event", "tenant", "ticket_type", "attendee_name", "status", "checked_in_at"]
    list_filter = ["status"]
    search_fields = ["code", "attendee_name", "order__buyer_email"]
    list_select_related = ["event", "tenant", "ticket_type"]
    fields = (
        "display_code",
        "tenant",
        "event",
        "order",
        "ticket_type",
        "seat",
        "attendee_name",
        "price_display",
        "status",
        "created_at",
        "voided_at",
        "checked_in_at",
        "checked_in_by",
    )
    # The attendee's name may be corrected; status, price and check-in move only through the services.
    readonly_fields = [name for name in fields if name != "attendee_name"]

    def has_add_permission(self, request):
        return False

    def has_delete_permission(self, request, obj=None):
        return False

    def get_search_results(self, request, queryset, search_term):
        # Codes are printed in groups (ABCD-EFGH-...) and typed in any case; stored without dashes, upper case.
        code = normalize_code(search_term)
        found, may_have_duplicates = super().get_search_results(request, queryset, search_term)
        if code and code != search_term:
            found |= queryset.filter(code=code)
        return found, may_have_duplicates

    @admin.display(description=_("code"), ordering="code")
    def display_code(self, obj):
        return obj.display_code

    @admin.display(description=_("price"))
    def price_display(self, obj):
        return money_format(obj.price, obj.currency)


@admin.register(LedgerEntry)
class LedgerEntryAdmin(ReadOnlyAdminMixin, UuidSearchMixin, admin.ModelAdmin):
    """Append-only: entries are booked by the services once per Stripe object; nobody edits or removes them."""

    list_display = ["created_at", "kind", "amount_display", "order", "tenant", "stripe_object_id"]
    list_filter = ["kind", "currency"]
    search_fields = ["stripe_object_id", "order__buyer_email"]
    uuid_search_fields = ["order_id"]
    list_select_related = ["order", "tenant"]
    date_hierarchy = "created_at"
    fields = ("created_at", "tenant", "event", "order", "kind", "amount_display", "currency", "stripe_object_id")
    readonly_fields = fields

    @admin.display(description=_("amount"), ordering="amount")
    def amount_display(self, obj):
        return money_format(obj.amount, obj.currency)


@admin.register(ConnectedAccount)
class ConnectedAccountAdmin(ReadOnlyAdminMixin, admin.ModelAdmin):
    """Organizations' Stripe accounts: a mirror of Connect webhooks, read-only (Stripe is the source of truth).

    Not an inline of the organization's page: tenants sits below billing in the app map.
    """

    list_display = [
        "tenant",
        "stripe_account_id",
        "charges_enabled",
        "payouts_enabled",
        "details_submitted",
        "is_test",
        "synced_at",
    ]
    list_filter = ["charges_enabled", "payouts_enabled", "details_submitted", "is_test"]
    search_fields = ["stripe_account_id", "tenant__name", "tenant__slug"]
    list_select_related = ["tenant"]
    fields = (
        "tenant",
        "stripe_account_id",
        "is_test",
        "country",
        "default_currency",
        "details_submitted",
        "charges_enabled",
        "payouts_enabled",
        "requirements_due",
        "disabled_reason",
        "created_at",
        "synced_at",
        "deauthorized_at",
    )
    readonly_fields = fields


@admin.register(WebhookEvent)
class WebhookEventAdmin(ReadOnlyAdminMixin, UuidSearchMixin, admin.ModelAdmin):
    """Stored Stripe events; "Process again" re-enqueues the processing task (a no-op for processed events)."""

    list_display = ["received_at", "type", "status", "attempts", "is_test", "stripe_event_id", "processed_at"]
    list_filter = ["status", "type", "is_test"]
    search_fields = ["stripe_event_id"]
    uuid_search_fields = ["order_id"]
    date_hierarchy = "received_at"
    actions = ["process_again"]
    fields = (
        "stripe_event_id",
        "type",
        "status",
        "attempts",
        "error",
        "is_test",
        "tenant",
        "order_id",
        "received_at",
        "processed_at",
        "payload_display",
    )
    readonly_fields = fields

    @admin.display(description=_("payload"))
    def payload_display(self, obj):
        return _json(obj.payload)

    def has_process_permission(self, request):
        # Rows are read-only for everyone; re-running the (idempotent) processing needs the change permission.
        return request.user.has_perm("billing.change_webhookevent")

    @admin.action(description=_("Process again"), permissions=["process"])
    def process_again(self, request, queryset):
        done = {WebhookEvent.Status.PROCESSED, WebhookEvent.Status.IGNORED}
        pending = [str(pk) for pk, status in queryset.values_list("pk", "status") if status not in done]
        skipped = queryset.count() - len(pending)
        for pk in pending:
            enqueue_on_commit(webhook_event_process_task, webhook_event_id=pk)
        self.message_user(
            request,
            ngettext("%(count)d event queued for processing.", "%(count)d events queued for processing.", len(pending))
            % {"count": len(pending)},
            messages.SUCCESS,
        )
        if skipped:
            self.message_user(
                request,
                ngettext(
                    "%(count)d event was already processed or ignored and was left alone.",
                    "%(count)d events were already processed or ignored and were left alone.",
                    skipped,
                )
                % {"count": skipped},
                messages.WARNING,
            )
