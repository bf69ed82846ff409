"""The organizer's answer pages of an invite-only event: recording answers, change requests."""

from django.urls import path

from rsvp import organizer_views as views

app_name = "rsvp_organizer"

prefix = "o/<slug:tenant_slug>/events/<uuid:event_id>/"

urlpatterns = [
    path(prefix + "guests/<uuid:guest_id>/answer/", views.guest_answer_record, name="record"),
    path(prefix + "change-requests/", views.change_request_list, name="change_requests"),
    path(prefix + "change-requests/<uuid:request_id>/", views.change_request_detail, name="change_request"),
]
