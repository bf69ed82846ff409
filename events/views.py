from django.contrib import messages
from django.core.exceptions import ValidationError
from django.shortcuts import redirect, render
from django.utils.translation import gettext as _
from django.views.decorators.http import require_http_methods, require_POST

from events import selectors, services
from events.forms import EventForm
from eventsaas.forms import add_service_errors
from guests.selectors import event_stats


def event_list(request):
    show_archived = request.GET.get("archived") == "1"
    events = selectors.event_list(tenant=request.tenant, include_archived=show_archived)
    return render(request, "events/event_list.html", {"events": events, "show_archived": show_archived})


def _save_form(request, form, save):
    try:
        return save(form.service_fields())
    except ValidationError as error:
        add_service_errors(form, error)
    return None


@require_http_methods(["GET", "POST"])
def event_create(request):
    form = EventForm(request.POST if request.method == "POST" else None)
    if request.method == "POST" and form.is_valid():
        event = _save_form(
            request, form, lambda data: services.event_create(tenant=request.tenant, acting_user=request.user, **data)
        )
        if event is not None:
            messages.success(request, _("Event created. Now add your guests."))
            return redirect("events:dashboard", tenant_slug=request.tenant.slug, event_id=event.pk)
    return render(request, "events/event_form.html", {"form": form}, status=400 if form.errors else 200)


@require_http_methods(["GET", "POST"])
def event_edit(request, event_id):
    event = selectors.event_get(tenant=request.tenant, event_id=event_id)
    form = EventForm(request.POST if request.method == "POST" else None, instance=event)
    if request.method == "POST" and form.is_valid():
        saved = _save_form(
            request, form, lambda data: services.event_update(event=event, acting_user=request.user, **data)
        )
        if saved is not None:
            messages.success(request, _("Event saved."))
            return redirect("events:dashboard", tenant_slug=request.tenant.slug, event_id=event.pk)
    return render(request, "events/event_form.html", {"form": form, "event": event}, status=400 if form.errors else 200)


@require_POST
def event_archive(request, event_id):
    event = selectors.event_get(tenant=request.tenant, event_id=event_id)
    services.event_archive(event=event, acting_user=request.user)
    messages.success(request, _("“%(name)s” is archived.") % {"name": event.name})
    return redirect("events:list", tenant_slug=request.tenant.slug)


def event_dashboard(request, event_id):
    event = selectors.event_get(tenant=request.tenant, event_id=event_id)
    return render(request, "events/dashboard.html", {"event": event, "stats": event_stats(event=event)})
