"""/api/v1/ endpoints for events and their ticket types (namespace "api")."""

from django.urls import path

from events.apis import (
    EventArchiveApi,
    EventDetailApi,
    EventTicketTypesApi,
    OrganizationEventsApi,
    TicketTypeDetailApi,
)

urlpatterns = [
    path("orgs/<slug:org_slug>/events", OrganizationEventsApi.as_view(), name="org-events"),
    path("events/<uuid:event_id>", EventDetailApi.as_view(), name="event-detail"),
    path("events/<uuid:event_id>/archive", EventArchiveApi.as_view(), name="event-archive"),
    path("events/<uuid:event_id>/ticket-types", EventTicketTypesApi.as_view(), name="event-ticket-types"),
    path("ticket-types/<uuid:ticket_type_id>", TicketTypeDetailApi.as_view(), name="ticket-type-detail"),
]
