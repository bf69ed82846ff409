"""/api/v1/: the JSON API. Endpoints are added by events/, guests/, rsvp/ and billing/."""

from django.urls import include, path

from tenants.apis import LogoutApi, TokenObtainApi, TokenRefreshApi

urlpatterns = [
    path("auth/token", TokenObtainApi.as_view(), name="token-obtain"),
    path("auth/token/refresh", TokenRefreshApi.as_view(), name="token-refresh"),
    path("auth/logout", LogoutApi.as_view(), name="logout"),
    path("", include("rsvp.api_urls")),
    path("", include("events.api_urls")),
    path("", include("guests.api_urls")),
    path("", include("billing.api_urls")),
]
