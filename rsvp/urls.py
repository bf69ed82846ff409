from django.urls import path

from rsvp import views

app_name = "rsvp"

urlpatterns = [
    path("rsvp/", views.login, name="login"),
    path("rsvp/answer/", views.answer, name="answer"),
    path("rsvp/events/<uuid:event_id>/calendar.ics", views.calendar, name="calendar"),
    path("rsvp/change-request/", views.change_request, name="change_request"),
    path("rsvp/logout/", views.logout, name="logout"),
]
