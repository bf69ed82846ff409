from django.urls import path

from events import views

app_name = "events"

urlpatterns = [
    path("o/<slug:tenant_slug>/", views.event_list, name="list"),
    path("o/<slug:tenant_slug>/events/new/", views.event_create, name="create"),
    path("o/<slug:tenant_slug>/events/<uuid:event_id>/", views.event_dashboard, name="dashboard"),
    path("o/<slug:tenant_slug>/events/<uuid:event_id>/edit/", views.event_edit, name="edit"),
    path("o/<slug:tenant_slug>/events/<uuid:event_id>/archive/", views.event_archive, name="archive"),
    path("o/<slug:tenant_slug>/events/<uuid:event_id>/ticket-types/", views.ticket_type_list, name="ticket-types"),
    path(
        "o/<slug:tenant_slug>/events/<uuid:event_id>/ticket-types/new/",
        views.ticket_type_create,
        name="ticket-type-create",
    ),
    path(
        "o/<slug:tenant_slug>/events/<uuid:event_id>/ticket-types/<uuid:ticket_type_id>/",
        views.ticket_type_edit,
        name="ticket-type-edit",
    ),
    path(
        "o/<slug:tenant_slug>/events/<uuid:event_id>/ticket-types/<uuid:ticket_type_id>/delete/",
        views.ticket_type_delete,
        name="ticket-type-delete",
    ),
    path(
        "o/<slug:tenant_slug>/events/<uuid:event_id>/ticket-types/<uuid:ticket_type_id>/off-sale/",
        views.ticket_type_off_sale,
        name="ticket-type-off-sale",
    ),
]
