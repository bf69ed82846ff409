import copy

from django import forms
from django.contrib import admin, messages
from django.contrib.admin.utils import unquote
from django.core.exceptions import ValidationError
from django.http import HttpResponseRedirect
from django.urls import reverse
from django.utils.translation import gettext_lazy as _

from events import services
from events.models import Event, TicketType
from eventsaas.forms import add_service_errors
from eventsaas.money import money_format
from tenants.models import ActingUser


@admin.register(Event)
class EventAdmin(admin.ModelAdmin):
    # Deleting an event with orders is refused by Django admin itself, for superusers too: the cascade reaches
    # orders, tickets and ledger entries, whose admins (billing/admin.py) never grant a delete permission, and
    # tickets protect their ticket type. tests/billing/test_admin.py holds both refusals in place.
    list_display = ["name", "tenant", "status", "kind", "starts_at", "rsvp_deadline", "language"]
    list_filter = ["status", "kind", "language", "tenant"]
    search_fields = ["name", "slug", "location", "tenant__name"]
    list_select_related = ["tenant"]
    autocomplete_fields = ["tenant"]
    readonly_fields = ["created_at", "updated_at"]
    date_hierarchy = "starts_at"

    def get_readonly_fields(self, request, obj=None):
        # The kind is chosen at creation: a ticketed event with orders cannot become invite-only. The
        # organization too: guests, ticket types, orders and tickets copy the event's tenant.
        if obj is not None:
            return [*self.readonly_fields, "tenant", "kind"]
        return self.readonly_fields


class TicketTypeAdminForm(forms.ModelForm):
    """Saved through events.services as the last step of its validation, so that the service's refusal (seats
    sold since the form loaded, another currency in the event) is a form error: Django admin then shows the
    form again with what the staff member typed, and logs or reports nothing as saved. Only a form without
    errors saves; TicketTypeAdmin.save_model takes the row the service stored (`saved`)."""

    # Set on the class TicketTypeAdmin.get_form builds for each request.
    acting_user: ActingUser = None
    # What the service stored; None until the form is valid.
    saved: TicketType | None = None

    class Meta:
        model = TicketType
        fields = ["event", *services.TICKET_TYPE_FIELDS]

    def clean(self):
        cleaned = super().clean()
        event = cleaned.get("event") if self.instance._state.adding else self.instance.event
        if event is not None and not event.is_ticketed:
            raise ValidationError({"event": _("Only ticketed events sell tickets.")})
        return cleaned

    def full_clean(self):
        super().full_clean()
        # Last, once every field and the model have validated. Django admin validates inline formsets after the
        # form: TicketTypeAdmin must keep having none, or one could fail after this save.
        if self.is_bound and not self.errors:
            self.saved = self._save_through_service()

    def _save_through_service(self) -> TicketType | None:
        data = {name: self.cleaned_data[name] for name in services.TICKET_TYPE_FIELDS if name in self.cleaned_data}
        try:
            if self.instance._state.adding:
                return services.ticket_type_create(
                    event=self.cleaned_data["event"], acting_user=self.acting_user, **data
                )
            # The service compares with the stored row: the form has already copied its values onto `instance`.
            stored = TicketType.objects.get(pk=self.instance.pk)
            return services.ticket_type_update(ticket_type=stored, acting_user=self.acting_user, **data)
        except ValidationError as error:
            add_service_errors(self, error)
            return None


class _Refused(Exception):
    """The service refused a delete that the admin had accepted: seats sold in between."""


@admin.register(TicketType)
class TicketTypeAdmin(admin.ModelAdmin):
    """Saved through events.services, so a capacity change is the same conditional update as on the pages.

    `sold` and `reserved` are billing's counters: shown, never edited.
    """

    form = TicketTypeAdminForm
    list_display = ["name", "event", "price_display", "capacity", "sold", "reserved", "remaining", "is_active"]
    list_filter = ["is_active", "currency"]
    search_fields = ["name", "event__name", "event__tenant__name"]
    list_select_related = ["event"]
    autocomplete_fields = ["event"]
    readonly_fields = ["tenant", "sold", "reserved", "remaining", "waitlist_started_at", "created_at"]
    fields = [
        "event",
        "tenant",
        "name",
        "description",
        "price",
        "currency",
        "capacity",
        "sold",
        "reserved",
        "remaining",
        "sales_start",
        "sales_end",
        "max_per_order",
        "access_code",
        "is_active",
        "position",
        "waitlist_started_at",
        "created_at",
    ]

    def get_readonly_fields(self, request, obj=None):
        if obj is not None:
            return [*self.readonly_fields, "event"]
        return self.readonly_fields

    def has_delete_permission(self, request, obj=None):
        # A type in use stays (the service's rule): a pending checkout would pay for a type that no longer exists.
        if obj is not None and services.ticket_type_is_in_use(ticket_type=obj):
            return False
        return super().has_delete_permission(request, obj)

    def get_actions(self, request):
        # The bulk delete would skip the per-row check above; one at a time, through the service.
        actions = super().get_actions(request)
        actions.pop("delete_selected", None)
        return actions

    def delete_view(self, request, object_id, extra_context=None):
        try:
            if request.method == "POST":
                self._check_still_deletable(request, object_id)
            return super().delete_view(request, object_id, extra_context)
        except _Refused as refusal:
            return self._refused(request, refusal, object_id)

    def _check_still_deletable(self, request, object_id):
        # Seats taken after the confirmation page loaded: has_delete_permission would now answer a bare 403.
        obj = self.get_object(request, unquote(object_id))
        if (
            obj is not None
            and services.ticket_type_is_in_use(ticket_type=obj)
            and super().has_delete_permission(request, obj)
        ):
            raise _Refused(str(services.TICKET_TYPE_IN_USE))

    def log_deletions(self, request, queryset):
        # Django logs before delete_model; the service may still refuse, so delete_model logs once it has deleted.
        return []

    def delete_model(self, request, obj):
        deleted = copy.copy(obj)  # the service's delete() clears obj.pk; the log entry needs it
        try:
            services.ticket_type_delete(ticket_type=obj, acting_user=request.user)
        except ValidationError as error:  # seats taken between the checks above and the delete
            raise _Refused(" ".join(error.messages)) from error
        super().log_deletions(request, [deleted])

    @admin.display(description=_("remaining"))
    def remaining(self, obj):
        if obj._state.adding:  # the add form shows its read-only fields for an object without a capacity yet
            return "-"
        return obj.remaining

    @admin.display(description=_("price"), ordering="price")
    def price_display(self, obj):
        return money_format(obj.price, obj.currency)

    def get_form(self, request, obj=None, change=False, **kwargs):
        form = super().get_form(request, obj, change, **kwargs)
        form.acting_user = request.user  # a class made for this request (modelform_factory)
        return form

    def save_model(self, request, obj, form, change):
        # The form saved through the service while it validated; Django's log entry and message follow.
        obj.pk = form.saved.pk
        obj.refresh_from_db()

    def _refused(self, request, refusal, object_id):
        """Show the service's late refusal of a delete and go back to the change form. The refusal is raised, not
        just reported, so that Django skips what follows a deletion (its success message); deletions are logged
        by delete_model itself."""
        self.message_user(request, str(refusal), messages.ERROR)
        return HttpResponseRedirect(reverse("admin:events_tickettype_change", args=[object_id]))
