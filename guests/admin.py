from django.contrib import admin

from guests.models import Guest, GuestActivity, GuestMessage


@admin.register(Guest)
class GuestAdmin(admin.ModelAdmin):
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
    search_fields = ["first_name", "last_name", "email", "code"]
    list_select_related = ["event", "tenant"]
    autocomplete_fields = ["event", "tenant"]
    readonly_fields = ["code", "rsvp_at", "last_login_at", "last_access_at", "invited_at", "created_at"]
    list_per_page = 100
    show_full_result_count = False  # COUNT(*) over 100,000 guests on every page is wasted work


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
