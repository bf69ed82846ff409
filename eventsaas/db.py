"""Database helpers that behave the same on SQLite, PostgreSQL and MongoDB."""

from django.db import DEFAULT_DB_ALIAS, connections, transaction


def is_mongodb(using: str = DEFAULT_DB_ALIAS) -> bool:
    return connections[using].vendor == "mongodb"


def atomic(using: str = DEFAULT_DB_ALIAS):
    """A transaction for tidiness, never for correctness.

    On SQL databases this is Django's atomic(). On MongoDB, Django's atomic() is
    a no-op, so this uses the backend's own session transaction (replica sets
    only). Invariants never depend on it: they hold through single-document
    conditional updates and unique indexes.
    """
    if is_mongodb(using):
        from django_mongodb_backend import transaction as mongo_transaction

        return mongo_transaction.atomic(using)
    return transaction.atomic(using=using)
