from django.contrib import messages
from django.core.exceptions import ValidationError
from django.shortcuts import get_object_or_404, redirect, render
from django.utils.translation import gettext as _
from django.views.decorators.http import require_http_methods, require_POST

from events import selectors, services
from events.forms import EventForm, TicketTypeForm
from events.hooks import dashboard_context
from events.models import TicketType
from eventsaas.forms import add_service_errors
from eventsaas.money import money_format


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
            if event.is_ticketed:
                messages.success(request, _("Event created. Now add the ticket types you sell."))
            else:
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
    # Guests' numbers, rsvp's change requests and billing's sales come from the sections those apps
    # register (events.hooks): events does not import the apps built on it.
    return render(request, "events/dashboard.html", {"event": event, **dashboard_context(event)})


# --- Ticket types (ticketed events) ---------------------------------------------------------------


def _ticket_type_get(request, event, ticket_type_id) -> TicketType:
    return get_object_or_404(TicketType.objects.for_tenant(request.tenant).filter(event_id=event.pk), pk=ticket_type_id)


def _back_to_ticket_types(request, event):
    return redirect("events:ticket-types", tenant_slug=request.tenant.slug, event_id=event.pk)


def ticket_type_list(request, event_id):
    event = selectors.ticketed_event_get(tenant=request.tenant, event_id=event_id)
    ticket_types = selectors.ticket_type_list(event=event)
    for ticket_type in ticket_types:
        ticket_type.price_display = money_format(ticket_type.price, ticket_type.currency)
    return render(request, "events/ticket_type_list.html", {"event": event, "ticket_types": ticket_types})


@require_http_methods(["GET", "POST"])
def ticket_type_create(request, event_id):
    event = selectors.ticketed_event_get(tenant=request.tenant, event_id=event_id)
    form = TicketTypeForm(request.POST if request.method == "POST" else None, event=event)
    if request.method == "POST" and form.is_valid():
        created = _save_form(
            request,
            form,
            lambda data: services.ticket_type_create(event=event, acting_user=request.user, **data),
        )
        if created is not None:
            messages.success(request, _("Ticket type “%(name)s” added.") % {"name": created.name})
            return _back_to_ticket_types(request, event)
    return render(
        request,
        "events/ticket_type_form.html",
        {"event": event, "form": form},
        status=400 if form.errors else 200,
    )


@require_http_methods(["GET", "POST"])
def ticket_type_edit(request, event_id, ticket_type_id):
    event = selectors.ticketed_event_get(tenant=request.tenant, event_id=event_id)
    ticket_type = _ticket_type_get(request, event, ticket_type_id)
    form = TicketTypeForm(request.POST if request.method == "POST" else None, instance=ticket_type, event=event)
    if request.method == "POST" and form.is_valid():
        saved = _save_form(
            request,
            form,
            lambda data: services.ticket_type_update(ticket_type=ticket_type, acting_user=request.user, **data),
        )
        if saved is not None:
            messages.success(request, _("Ticket type “%(name)s” saved.") % {"name": saved.name})
            return _back_to_ticket_types(request, event)
    context = {"event": event, "form": form, "ticket_type": ticket_type}
    return render(request, "events/ticket_type_form.html", context, status=400 if form.errors else 200)


@require_http_methods(["GET", "POST"])
def ticket_type_delete(request, event_id, ticket_type_id):
    """Delete a type nobody bought; one with sales can only be taken off sale, and the page says so."""
    event = selectors.ticketed_event_get(tenant=request.tenant, event_id=event_id)
    ticket_type = _ticket_type_get(request, event, ticket_type_id)
    errors = []
    if request.method == "POST":
        try:
            services.ticket_type_delete(ticket_type=ticket_type, acting_user=request.user)
        except ValidationError as error:
            errors = error.messages
        else:
            messages.success(request, _("Ticket type “%(name)s” deleted.") % {"name": ticket_type.name})
            return _back_to_ticket_types(request, event)
    context = {"event": event, "ticket_type": ticket_type, "errors": errors}
    return render(request, "events/ticket_type_confirm_delete.html", context, status=400 if errors else 200)


@require_POST
def ticket_type_off_sale(request, event_id, ticket_type_id):
    """Stop selling a type (sold tickets stay valid); the edit page puts it back on sale."""
    event = selectors.ticketed_event_get(tenant=request.tenant, event_id=event_id)
    ticket_type = _ticket_type_get(request, event, ticket_type_id)
    services.ticket_type_update(ticket_type=ticket_type, acting_user=request.user, is_active=False)
    messages.success(request, _("“%(name)s” is no longer on sale.") % {"name": ticket_type.name})
    return _back_to_ticket_types(request, event)
