"""/api/v1/ endpoints for events and their ticket types (namespace "api")."""

from django.urls import path

from events.apis import (
    EventActivityApi,
    EventArchiveApi,
    EventDetailApi,
    EventDietaryApi,
    EventQuestionReportApi,
    EventStatsApi,
    EventTicketTypesApi,
    OrganizationEventsApi,
    TicketTypeDetailApi,
)

urlpatterns = [
    path("orgs/<slug:org_slug>/events", OrganizationEventsApi.as_view(), name="org-events"),
    path("events/<uuid:event_id>", EventDetailApi.as_view(), name="event-detail"),
    path("events/<uuid:event_id>/archive", EventArchiveApi.as_view(), name="event-archive"),
    path("events/<uuid:event_id>/stats", EventStatsApi.as_view(), name="event-stats"),
    path("events/<uuid:event_id>/dietary", EventDietaryApi.as_view(), name="event-dietary"),
    path("events/<uuid:event_id>/questions", EventQuestionReportApi.as_view(), name="event-questions"),
    path("events/<uuid:event_id>/activity", EventActivityApi.as_view(), name="event-activity"),
    path("events/<uuid:event_id>/ticket-types", EventTicketTypesApi.as_view(), name="event-ticket-types"),
    path("ticket-types/<uuid:ticket_type_id>", TicketTypeDetailApi.as_view(), name="ticket-type-detail"),
]
