from django.urls import path

from billing import views

app_name = "billing"

urlpatterns = [
    path("e/<uuid:event_id>/", views.shop, name="shop"),
    path("e/<uuid:event_id>/waitlist/", views.waitlist_join, name="waitlist-join"),
    path("waitlist/<uuid:entry_id>/<str:token>/", views.waitlist_entry, name="waitlist-entry"),
    path("billing/stripe/webhook/", views.stripe_webhook, name="stripe-webhook"),
    path("billing/stripe/connect-webhook/", views.stripe_connect_webhook, name="stripe-connect-webhook"),
    path("orders/<uuid:order_id>/<str:token>/", views.order_page, name="order"),
    path("orders/<uuid:order_id>/<str:token>/cancel/", views.order_cancel, name="order-cancel"),
    path("orders/<uuid:order_id>/<str:token>/test-checkout/", views.test_checkout, name="test-checkout"),
]
