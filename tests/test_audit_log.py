"""eventsaas.services.audit_log_together: a unit of work's audit entries in one insert, none lost."""

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from eventsaas.models import AuditLog
from eventsaas.services import audit_log_record, audit_log_record_many, audit_log_together
from tests.support.backends import statements

pytestmark = pytest.mark.django_db(transaction=True)  # autocommit: each write stands alone, as on MongoDB


def test_the_entries_recorded_in_the_block_are_written_in_one_insert_when_it_ends(tenant):
    with CaptureQueriesContext(connection) as queries, audit_log_together():
        audit_log_record(action="order.paid", tenant_id=tenant.pk)
        audit_log_record_many(
            entries=[
                {"action": "guest.created", "tenant_id": tenant.pk},
                {"action": "rsvp.coming", "tenant_id": tenant.pk},
            ]
        )
        with audit_log_together():  # a block inside another joins it
            audit_log_record(action="order.confirmed", tenant_id=tenant.pk)
        assert not AuditLog.objects.exists()  # nothing yet: written when the outer block ends

    assert len(statements(queries, "INSERT", "tenants_auditlog")) == 1
    assert sorted(AuditLog.objects.values_list("action", flat=True)) == [
        "guest.created",
        "order.confirmed",
        "order.paid",
        "rsvp.coming",
    ]


def test_outside_the_block_each_entry_is_written_at_once(tenant):
    audit_log_record(action="order.paid", tenant_id=tenant.pk)

    assert AuditLog.objects.filter(action="order.paid").exists()


def test_a_failing_block_keeps_the_entries_of_writes_that_stood(tenant):
    """Outside a transaction (and on MongoDB) the block's writes are not undone, so neither are their entries."""
    with pytest.raises(ValueError), audit_log_together():
        audit_log_record(action="order.paid", tenant_id=tenant.pk)
        raise ValueError("the block failed after the payment was written")

    assert list(AuditLog.objects.values_list("action", flat=True)) == ["order.paid"]
    with audit_log_together():  # the block is over: a new one starts empty
        pass
    assert AuditLog.objects.count() == 1
