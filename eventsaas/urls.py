from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.urls import include, path
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerSplitView

from eventsaas.views import security_txt
from tenants.apis import jwks
from tenants.forms import EmailAuthenticationForm
from tenants.views import PasswordResetConfirmView, PasswordResetView, landing, signup

urlpatterns = [
    path("", landing, name="landing"),
    path("signup/", signup, name="signup"),
    path("login/", auth_views.LoginView.as_view(authentication_form=EmailAuthenticationForm), name="login"),
    path("logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("password-reset/", PasswordResetView.as_view(), name="password_reset"),
    path("password-reset/sent/", auth_views.PasswordResetDoneView.as_view(), name="password_reset_done"),
    path("reset/<uidb64>/<token>/", PasswordResetConfirmView.as_view(), name="password_reset_confirm"),
    path("reset/done/", auth_views.PasswordResetCompleteView.as_view(), name="password_reset_complete"),
    path("i18n/", include("django.conf.urls.i18n")),
    path("admin/", admin.site.urls),
    path(".well-known/jwks.json", jwks, name="jwks"),
    path(".well-known/security.txt", security_txt, name="security-txt"),
    path("api/v1/", include(("eventsaas.api_urls", "api"), namespace="api")),
    path("api/schema/", SpectacularAPIView.as_view(), name="api-schema"),
    path("api/docs/", SpectacularSwaggerSplitView.as_view(url_name="api-schema"), name="api-docs"),
    path("", include("tenants.urls")),
    path("", include("events.urls")),
    path("", include("guests.urls")),
    path("", include("rsvp.urls")),
    path("", include("rsvp.organizer_urls")),
    path("", include("billing.urls")),
    path("", include("billing.organizer_urls")),
]

handler404 = "eventsaas.views.page_not_found"
handler500 = "eventsaas.views.server_error"
