from django.urls import path

from guests import party_import_views, views

app_name = "guests"

prefix = "o/<slug:tenant_slug>/events/<uuid:event_id>/"

urlpatterns = [
    path(prefix + "guests/", views.guest_list, name="list"),
    path(prefix + "guests/new/", views.guest_create, name="create"),
    path(prefix + "guests/export/<str:file_format>/", views.guest_export, name="export"),
    path(prefix + "guests/group/", views.guest_group_connect, name="group_connect"),
    path(prefix + "guests/<uuid:guest_id>/", views.guest_detail, name="detail"),
    path(prefix + "guests/invite/", views.guest_invite_many, name="invite_many"),
    path(prefix + "guests/<uuid:guest_id>/invite/", views.guest_invite, name="invite"),
    path(prefix + "guests/<uuid:guest_id>/delete/", views.guest_delete, name="delete"),
    path(prefix + "guests/<uuid:guest_id>/regenerate-code/", views.guest_code_regenerate, name="regenerate_code"),
    path(prefix + "guests/<uuid:guest_id>/leave-group/", views.guest_group_leave, name="leave_group"),
    path(prefix + "dietary/", views.dietary_report, name="dietary"),
    path(prefix + "dietary/export/<str:file_format>/", views.dietary_export, name="dietary_export"),
    path(prefix + "questions/", views.question_report, name="questions"),
    path(prefix + "questions/export/<str:file_format>/", views.question_export, name="questions_export"),
    path(prefix + "activity/", views.activity, name="activity"),
    path(prefix + "messages/", views.message_log, name="messages"),
    path(prefix + "guests/import/party/", party_import_views.party_import, name="import_party"),
    path(prefix + "guests/import/party/confirm/", party_import_views.party_import_confirm, name="import_party_confirm"),
    path(prefix + "guests/import/party/mapping/", party_import_views.party_import_mapping, name="import_party_mapping"),
]

urlpatterns += [
    path(prefix + "guests/import/", views.guest_import, name="import"),
    path(prefix + "guests/import/<uuid:import_id>/", views.guest_import_detail, name="import_detail"),
    path(prefix + "guests/import/<uuid:import_id>/confirm/", views.guest_import_confirm, name="import_confirm"),
    path(prefix + "guests/import/<uuid:import_id>/status/", views.guest_import_status, name="import_status"),
    path(prefix + "guests/import/<uuid:import_id>/errors.csv", views.guest_import_errors, name="import_errors"),
]
