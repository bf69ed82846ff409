"""/api/v1/ organizer endpoints for guests (namespace "api")."""

from django.urls import path

from guests.apis import (
    EventGuestsApi,
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
]
