from django.urls import path

from tenants import views

app_name = "tenants"

urlpatterns = [
    path("app/", views.home, name="home"),
    path("app/organizations/", views.switch, name="switch"),
    path("app/account/", views.account, name="account"),
    path("app/account/verify/resend/", views.email_verification_resend, name="email_verification_resend"),
    path("app/account/verify/<str:token>/", views.email_verify, name="email_verify"),
    path("app/invitations/<str:token>/", views.invitation_accept, name="invitation_accept"),
    path("o/<slug:tenant_slug>/team/", views.team, name="team"),
    path("o/<slug:tenant_slug>/team/<uuid:membership_id>/role/", views.team_member_role, name="team_member_role"),
    path("o/<slug:tenant_slug>/team/<uuid:membership_id>/remove/", views.team_member_remove, name="team_member_remove"),
    path("o/<slug:tenant_slug>/team/leave/", views.team_leave, name="team_leave"),
    path(
        "o/<slug:tenant_slug>/team/invitations/<uuid:invitation_id>/revoke/",
        views.team_invitation_revoke,
        name="team_invitation_revoke",
    ),
    path(
        "o/<slug:tenant_slug>/team/invitations/<uuid:invitation_id>/resend/",
        views.team_invitation_resend,
        name="team_invitation_resend",
    ),
]
