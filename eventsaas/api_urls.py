"""/api/v1/: the JSON API. Organizer endpoints are added by events/, guests/ and billing/."""

from django.urls import include, path

from rsvp.apis import GuestLoginApi, RsvpApi
from tenants.apis import LogoutApi, TokenObtainApi, TokenRefreshApi

urlpatterns = [
    path("auth/guest-login", GuestLoginApi.as_view(), name="guest-login"),
    path("auth/token", TokenObtainApi.as_view(), name="token-obtain"),
    path("auth/token/refresh", TokenRefreshApi.as_view(), name="token-refresh"),
    path("auth/logout", LogoutApi.as_view(), name="logout"),
    path("rsvp", RsvpApi.as_view(), name="rsvp"),
    path("", include("events.api_urls")),
    path("", include("guests.api_urls")),
    path("", include("billing.api_urls")),
]
