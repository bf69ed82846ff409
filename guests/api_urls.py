"""/api/v1/ organizer endpoints for guests and the event reports that read them (namespace "api")."""

from django.urls import path

from guests.apis import (
    EventActivityApi,
    EventDietaryApi,
    EventGuestsApi,
    EventQuestionReportApi,
    EventStatsApi,
    GroupConnectApi,
    GuestBulkCreateApi,
    GuestCodeRegenerateApi,
    GuestDetailApi,
    GuestGroupLeaveApi,
    GuestInviteApi,
    InvitationsSendApi,
)

urlpatterns = [
    path("events/<uuid:event_id>/guests", EventGuestsApi.as_view(), name="event-guests"),
    path("events/<uuid:event_id>/guests/bulk", GuestBulkCreateApi.as_view(), name="guest-bulk-create"),
    path("events/<uuid:event_id>/guests/<uuid:guest_id>", GuestDetailApi.as_view(), name="guest-detail"),
    path(
        "events/<uuid:event_id>/guests/<uuid:guest_id>/regenerate-code",
        GuestCodeRegenerateApi.as_view(),
        name="guest-regenerate-code",
    ),
    path(
        "events/<uuid:event_id>/guests/<uuid:guest_id>/leave-group",
        GuestGroupLeaveApi.as_view(),
        name="guest-leave-group",
    ),
    path("events/<uuid:event_id>/groups", GroupConnectApi.as_view(), name="group-connect"),
    path("events/<uuid:event_id>/guests/<uuid:guest_id>/invite", GuestInviteApi.as_view(), name="guest-invite"),
    path("events/<uuid:event_id>/invitations", InvitationsSendApi.as_view(), name="invitations-send"),
    path("events/<uuid:event_id>/stats", EventStatsApi.as_view(), name="event-stats"),
    path("events/<uuid:event_id>/dietary", EventDietaryApi.as_view(), name="event-dietary"),
    path("events/<uuid:event_id>/questions", EventQuestionReportApi.as_view(), name="event-questions"),
    path("events/<uuid:event_id>/activity", EventActivityApi.as_view(), name="event-activity"),
]
