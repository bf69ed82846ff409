from django.contrib import admin

from events.models import Event


@admin.register(Event)
class EventAdmin(admin.ModelAdmin):
    list_display = ["name", "tenant", "status", "kind", "starts_at", "rsvp_deadline", "language"]
    list_filter = ["status", "kind", "language", "tenant"]
    search_fields = ["name", "slug", "location", "tenant__name"]
    list_select_related = ["tenant"]
    autocomplete_fields = ["tenant"]
    readonly_fields = ["created_at", "updated_at"]
    date_hierarchy = "starts_at"
