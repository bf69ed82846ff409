"""Admin of the platform's models: the audit log (read-only) and failed tasks (retry)."""

import json

from django.contrib import admin, messages
from django.utils.html import format_html
from django.utils.translation import gettext_lazy as _
from django.utils.translation import ngettext

from eventsaas.models import AuditLog, FailedTask
from eventsaas.services import failed_task_retry


class ReadOnlyAdminMixin:
    """A mirror or a record staff read but never add, change or delete by hand."""

    def has_add_permission(self, request, obj=None):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False


@admin.register(AuditLog)
class AuditLogAdmin(admin.ModelAdmin):
    """Read-only: the audit log is append-only, written by services."""

    list_display = ["created_at", "action", "tenant", "event_id", "actor_user", "actor_guest_id"]
    list_filter = ["action", "tenant"]
    search_fields = ["action", "object_id", "actor_user__email"]
    list_select_related = ["tenant", "actor_user"]
    date_hierarchy = "created_at"

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False


@admin.register(FailedTask)
class FailedTaskAdmin(admin.ModelAdmin):
    """Tasks that failed for good; "Retry selected" sends them again (each row once)."""

    list_display = ["failed_at", "task_name", "stage", "short_error", "retries", "retried_at"]
    list_filter = ["stage", "task_name", ("retried_at", admin.EmptyFieldListFilter)]
    search_fields = ["task_name", "task_id", "error"]
    date_hierarchy = "failed_at"
    actions = ["retry_selected"]
    fields = (
        "task_name",
        "task_id",
        "stage",
        "failed_at",
        "retries",
        "arguments",
        "error",
        "formatted_traceback",
        "retried_at",
        "retried_by",
    )
    readonly_fields = fields

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    @admin.display(description=_("error"))
    def short_error(self, obj):
        return obj.error if len(obj.error) <= 100 else obj.error[:99] + "…"

    @admin.display(description=_("arguments"))
    def arguments(self, obj):
        return format_html(
            "<pre>{}</pre>", json.dumps({"args": obj.args, "kwargs": obj.kwargs}, indent=2, ensure_ascii=False)
        )

    @admin.display(description=_("traceback"))
    def formatted_traceback(self, obj):
        return format_html("<pre>{}</pre>", obj.traceback)

    @admin.action(description=_("Retry selected"), permissions=["retry"])
    def retry_selected(self, request, queryset):
        sent, skipped, unknown = 0, 0, []
        for failed_task in queryset:
            try:
                if failed_task_retry(failed_task=failed_task, acting_user=request.user):
                    sent += 1
                else:
                    skipped += 1
            except KeyError:
                unknown.append(failed_task.task_name)
        if sent:
            self.message_user(
                request,
                ngettext("%(count)d task sent again.", "%(count)d tasks sent again.", sent) % {"count": sent},
                messages.SUCCESS,
            )
        if skipped:
            self.message_user(
                request,
                ngettext(
                    "%(count)d task was already retried; its new failure, if any, is a new row.",
                    "%(count)d tasks were already retried; their new failures, if any, are new rows.",
                    skipped,
                )
                % {"count": skipped},
                messages.WARNING,
            )
        if unknown:
            self.message_user(
                request,
                _("No such task any more: %(names)s.") % {"names": ", ".join(sorted(set(unknown)))},
                messages.ERROR,
            )

    def has_retry_permission(self, request):
        # Sending a task again is a change; view-only staff may look but not retry.
        return request.user.has_perm("eventsaas.change_failedtask")
