"""What a test's block leaves for after the commit (emails and other tasks), run as the block ends.

A test runs inside one transaction that is rolled back, so `enqueue_on_commit` work would never run."""

from django.test import TestCase


def after_commit():
    """`with after_commit(): client.post(...)`: the on-commit callbacks of the block run when it ends."""
    return TestCase.captureOnCommitCallbacks(execute=True)
