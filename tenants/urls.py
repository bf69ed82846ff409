from django.urls import path

from tenants import views

app_name = "tenants"

urlpatterns = [
    path("app/", views.home, name="home"),
    path("app/organizations/", views.switch, name="switch"),
    path("app/invitations/<str:token>/", views.invitation_accept, name="invitation_accept"),
    path("o/<slug:tenant_slug>/team/", views.team, name="team"),
]
