"""Data migration tests: migrate back, write rows with the historical models, migrate forward."""

from django.db import connection
from django.db.migrations.executor import MigrationExecutor

from tests.support import mongo_shadow


def migrate_to(targets):
    """Migrate to `targets` ((app, migration name or None) pairs); the models as of them, every other app as now."""
    earlier = mongo_shadow.take_failures()
    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    executor.migrate(targets)
    # The migration machinery introspects and rebuilds tables with SQL of its own; what must have a
    # MongoDB form is the data migration's ORM queries, which the shadow compiler still checks.
    mongo_shadow.failures[:] = earlier + [f for f in mongo_shadow.take_failures() if f.kind == "compile"]
    pinned = {app for app, _name in targets}
    nodes = [t for t in targets if t[1] is not None]
    nodes += [leaf for leaf in executor.loader.graph.leaf_nodes() if leaf[0] not in pinned]
    return executor.loader.project_state(nodes).apps


def latest_migrations():
    """Every app's newest migration (the target that migrates all the way forward)."""
    earlier = mongo_shadow.take_failures()
    leaves = MigrationExecutor(connection).loader.graph.leaf_nodes()
    mongo_shadow.failures[:] = earlier
    return leaves
