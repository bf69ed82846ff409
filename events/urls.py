from django.urls import path

from events import views

app_name = "events"

urlpatterns = [
    path("o/<slug:tenant_slug>/", views.event_list, name="list"),
    path("o/<slug:tenant_slug>/events/new/", views.event_create, name="create"),
    path("o/<slug:tenant_slug>/events/<uuid:event_id>/", views.event_dashboard, name="dashboard"),
    path("o/<slug:tenant_slug>/events/<uuid:event_id>/edit/", views.event_edit, name="edit"),
    path("o/<slug:tenant_slug>/events/<uuid:event_id>/archive/", views.event_archive, name="archive"),
]
