#!/usr/bin/env python
"""`makemigrations --check` without a database connection.

makemigrations checks the migration history against the server first, so on
MongoDB it needs one. This compares the migration files with the models
directly, which is all the check needs. Exit 1 (and list the changes) when a
migration is missing. Run with the settings to check, e.g.
    DATABASE_URL=mongodb://127.0.0.1:27017/eventsaas python scripts/check_migrations_offline.py
"""

import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "eventsaas.settings")

import django  # noqa: E402

django.setup()

from django.apps import apps  # noqa: E402
from django.db.migrations.autodetector import MigrationAutodetector  # noqa: E402
from django.db.migrations.loader import MigrationLoader  # noqa: E402
from django.db.migrations.questioner import NonInteractiveMigrationQuestioner  # noqa: E402
from django.db.migrations.state import ProjectState  # noqa: E402

loader = MigrationLoader(None, ignore_no_migrations=True)
changes = MigrationAutodetector(
    loader.project_state(),
    ProjectState.from_apps(apps),
    NonInteractiveMigrationQuestioner(specified_apps=None, dry_run=True),
).changes(graph=loader.graph)
if changes:
    for app_label, migrations in changes.items():
        for migration in migrations:
            print(f"missing migration in {app_label}: {[str(op.describe()) for op in migration.operations]}")
    sys.exit(1)
print(f"migrations match the models ({os.environ.get('DATABASE_URL', 'sqlite').split(':')[0]})")
