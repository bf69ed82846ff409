"""The organizer's billing pages: a ticketed event's orders, refunds and check-in; the organization's Payments
and earnings."""

from django.urls import path

from billing import organizer_views as views

app_name = "billing_organizer"

prefix = "o/<slug:tenant_slug>/events/<uuid:event_id>/"

urlpatterns = [
    path("o/<slug:tenant_slug>/earnings/", views.earnings, name="earnings"),
    path(
        "o/<slug:tenant_slug>/earnings/export/<str:what>/<str:file_format>/",
        views.earnings_export,
        name="earnings-export",
    ),
    path("o/<slug:tenant_slug>/payments/", views.payments, name="payments"),
    path("o/<slug:tenant_slug>/payments/onboarding/", views.payments_onboarding, name="connect-onboarding"),
    path("o/<slug:tenant_slug>/payments/onboarding/refresh/", views.payments_refresh, name="connect-refresh"),
    path("o/<slug:tenant_slug>/payments/onboarding/return/", views.payments_return, name="connect-return"),
    path(
        "o/<slug:tenant_slug>/payments/onboarding/simulated/",
        views.payments_simulated_onboarding,
        name="connect-simulated",
    ),
    path(prefix + "orders/", views.order_list, name="orders"),
    path(prefix + "orders/export/<str:file_format>/", views.order_export, name="orders-export"),
    path(prefix + "orders/<uuid:order_id>/", views.order_detail, name="order"),
    path(prefix + "orders/<uuid:order_id>/refund/", views.order_refund, name="order-refund"),
    path(prefix + "orders/<uuid:order_id>/accept/", views.order_accept, name="order-accept"),
    path(prefix + "orders/<uuid:order_id>/resend/", views.order_resend, name="order-resend"),
    path(prefix + "waitlist/", views.waitlist, name="waitlist"),
    path(prefix + "check-in/", views.check_in, name="check-in"),
    path(prefix + "check-in/export/<str:file_format>/", views.check_in_export, name="check-in-export"),
]
