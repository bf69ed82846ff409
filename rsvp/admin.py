from django.contrib import admin

from rsvp.models import ChangeRequest


@admin.register(ChangeRequest)
class ChangeRequestAdmin(admin.ModelAdmin):
    """Read-only: guests ask on their page, organizers decide on theirs (rsvp.services)."""

    list_display = ["created_at", "guest", "status", "event", "tenant", "decided_at"]
    list_filter = ["status"]
    search_fields = ["guest__search_key", "message"]
    list_select_related = ["guest", "event", "tenant"]
    date_hierarchy = "created_at"
    list_per_page = 100
    show_full_result_count = False

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False
