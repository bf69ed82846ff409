"""The organizer's billing pages of a ticketed event (orders, refunds, check-in)."""

from django.urls import path

from billing import organizer_views as views

app_name = "billing_organizer"

prefix = "o/<slug:tenant_slug>/events/<uuid:event_id>/"

urlpatterns = [
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
