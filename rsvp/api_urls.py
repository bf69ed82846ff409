"""/api/v1/ endpoints of the RSVP side (namespace "api"): the guest's, and the organizer's answers for guests."""

from django.urls import path

from rsvp.apis import (
    ChangeRequestApproveApi,
    ChangeRequestDeclineApi,
    EventChangeRequestsApi,
    GuestLoginApi,
    GuestRsvpRecordApi,
    RsvpApi,
    RsvpChangeRequestApi,
)

urlpatterns = [
    path("auth/guest-login", GuestLoginApi.as_view(), name="guest-login"),
    path("rsvp", RsvpApi.as_view(), name="rsvp"),
    path("rsvp/change-request", RsvpChangeRequestApi.as_view(), name="rsvp-change-request"),
    path("events/<uuid:event_id>/guests/<uuid:guest_id>/rsvp", GuestRsvpRecordApi.as_view(), name="guest-rsvp-record"),
    path("events/<uuid:event_id>/change-requests", EventChangeRequestsApi.as_view(), name="change-requests"),
    path(
        "events/<uuid:event_id>/change-requests/<uuid:change_request_id>/approve",
        ChangeRequestApproveApi.as_view(),
        name="change-request-approve",
    ),
    path(
        "events/<uuid:event_id>/change-requests/<uuid:change_request_id>/decline",
        ChangeRequestDeclineApi.as_view(),
        name="change-request-decline",
    ),
]
