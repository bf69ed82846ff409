"""What the billing state machines share (tests/billing/test_*_invariants.py)."""

from django.db import transaction
from hypothesis.stateful import RuleBasedStateMachine

from tenants.models import Role
from tests.factories import MembershipFactory, TenantFactory, TicketedEventFactory
from tests.support.backends import tasks_left_queued


class TicketedEventMachine(RuleBasedStateMachine):
    """Each example: a new organization with its owner (`self.owner`) and a ticketed event on sale
    (`self.event`), inside a savepoint rolled back at the end, with the tasks services send on commit left queued
    (so SQLite, PostgreSQL and MongoDB walk the same sequences)."""

    def __init__(self):
        super().__init__()
        self._savepoint = transaction.atomic()
        self._savepoint.__enter__()
        self._queued = tasks_left_queued()
        self._queued.__enter__()
        tenant = TenantFactory()
        self.owner = MembershipFactory(tenant=tenant, role=Role.OWNER).user
        self.event = TicketedEventFactory(tenant=tenant)

    def teardown(self):
        self._queued.__exit__(None, None, None)
        transaction.set_rollback(True)
        self._savepoint.__exit__(None, None, None)
