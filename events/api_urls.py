"""/api/v1/ organizer endpoints for events (namespace "api")."""

from django.urls import path

from events.apis import (
    EventActivityApi,
    EventArchiveApi,
    EventDetailApi,
    EventDietaryApi,
    EventStatsApi,
    OrganizationEventsApi,
)

urlpatterns = [
    path("orgs/<slug:org_slug>/events", OrganizationEventsApi.as_view(), name="org-events"),
    path("events/<uuid:event_id>", EventDetailApi.as_view(), name="event-detail"),
    path("events/<uuid:event_id>/archive", EventArchiveApi.as_view(), name="event-archive"),
    path("events/<uuid:event_id>/stats", EventStatsApi.as_view(), name="event-stats"),
    path("events/<uuid:event_id>/dietary", EventDietaryApi.as_view(), name="event-dietary"),
    path("events/<uuid:event_id>/activity", EventActivityApi.as_view(), name="event-activity"),
]
