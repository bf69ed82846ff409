"""/api/v1/ endpoints of ticketed events: checkout, waitlist, orders, refunds, check-in, sales (namespace "api")."""

from django.urls import path

from billing.apis import (
    CheckoutApi,
    EventCheckInApi,
    EventOrdersApi,
    EventSalesApi,
    EventWaitlistApi,
    OrderDetailApi,
    OrderRefundApi,
    WaitlistJoinApi,
)

urlpatterns = [
    path("events/<uuid:event_id>/checkout", CheckoutApi.as_view(), name="event-checkout"),
    path("events/<uuid:event_id>/orders", EventOrdersApi.as_view(), name="event-orders"),
    path("events/<uuid:event_id>/check-in", EventCheckInApi.as_view(), name="event-check-in"),
    path("events/<uuid:event_id>/sales", EventSalesApi.as_view(), name="event-sales"),
    path("events/<uuid:event_id>/waitlist", EventWaitlistApi.as_view(), name="event-waitlist"),
    path("events/<uuid:event_id>/waitlist/entries", WaitlistJoinApi.as_view(), name="event-waitlist-join"),
    path("orders/<uuid:order_id>", OrderDetailApi.as_view(), name="order-detail"),
    path("orders/<uuid:order_id>/refund", OrderRefundApi.as_view(), name="order-refund"),
]
