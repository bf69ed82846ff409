from django.contrib import admin
from django.utils.translation import gettext_lazy as _

from guests import services
from guests.codes import name_key
from guests.models import Guest, GuestActivity, GuestMessage
from guests.selectors import search_matches


@admin.register(Guest)
class GuestAdmin(admin.ModelAdmin):
    """Staff edit guests' details through the same service as organizers; answers are read-only here."""

    list_display = [
        "last_name",
        "first_name",
        "event",
        "tenant",
        "status",
        "num_guests",
        "expected_guests",
        "code",
        "last_login_at",
        "rsvp_at",
    ]
    list_filter = ["status", "event", "tenant"]
    search_fields = ["email"]
    search_help_text = _("Names and codes without accents, case or punctuation (“perez”, “obrien”), or an email.")
    list_select_related = ["event", "tenant"]
    autocomplete_fields = ["event"]
    exclude = ["tenant"]  # always the event's
    readonly_fields = [
        "code",
        "status",
        "num_guests",
        "answered_by_kind",
        "answered_by_guest_id",
        "answered_by_user_id",
        "rsvp_at",
        "last_login_at",
        "last_access_at",
        "invited_at",
        "created_at",
    ]
    list_per_page = 100
    show_full_result_count = False  # COUNT(*) over 100,000 guests on every page is wasted work

    def get_readonly_fields(self, request, obj=None):
        # A guest stays with its event: its household, code, answers and tickets belong to that event.
        if obj is not None:
            return [*self.readonly_fields, "event"]
        return self.readonly_fields

    def get_search_results(self, request, queryset, search_term):
        """Each word in the stored search key or the email: the organizer's search (guests.selectors)."""
        queryset, may_have_duplicates = super().get_search_results(request, queryset, "")
        for term in search_term.split():
            if name_key(term):
                queryset = queryset.filter(search_matches(term))
        return queryset, may_have_duplicates

    def save_model(self, request, obj, form, change):
        services.guest_admin_save(
            guest=obj, changed_fields=list(form.changed_data), acting_user=request.user, is_new=not change
        )


@admin.register(GuestActivity)
class GuestActivityAdmin(admin.ModelAdmin):
    """Read-only: activity is written in batches by the worker (guests.activity)."""

    list_display = ["at", "kind", "guest", "event", "tenant", "user_agent"]
    list_filter = ["kind"]
    search_fields = ["guest__last_name", "guest__code"]
    list_select_related = ["guest", "event", "tenant"]
    date_hierarchy = "at"
    list_per_page = 100
    show_full_result_count = False

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False


@admin.register(GuestMessage)
class GuestMessageAdmin(admin.ModelAdmin):
    """Read-only: the log of emails, written by guests.notifications."""

    list_display = ["created_at", "kind", "recipient", "status", "window", "event", "tenant", "sent_at"]
    list_filter = ["kind", "status"]
    search_fields = ["recipient", "guest__last_name", "window"]
    list_select_related = ["event", "tenant"]
    date_hierarchy = "created_at"
    list_per_page = 100
    show_full_result_count = False

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False
