#!/usr/bin/env python
"""Derive mongo_migrations/ from Django's own contrib migrations.

On MongoDB, admin, auth and contenttypes use ObjectIdAutoField primary keys
(eventsaas.mongo_apps). Their migrations are Django's, with AutoField swapped
for ObjectIdAutoField; the names stay the same so our migrations' dependencies
(e.g. tenants -> auth.0012) resolve on every backend.

Run after upgrading Django, then check with
    DATABASE_URL=mongodb://127.0.0.1:27017/eventsaas python manage.py makemigrations --check --dry-run
Against a real server, `python manage.py makemigrations admin auth contenttypes`
with the MongoDB settings regenerates them the backend's way; see docs/mongodb.md.
"""

import re
import shutil
from pathlib import Path

import django

ROOT = Path(__file__).resolve().parent.parent
APPS = ("admin", "auth", "contenttypes")
HEADER = "# Derived from Django's own migration by scripts/derive_mongo_migrations.py; do not edit.\n"


def derive(source: str) -> str:
    text = re.sub(r"\bmodels\.AutoField\(", "django_mongodb_backend.fields.ObjectIdAutoField(", source)
    if "django_mongodb_backend" in text:
        text = text.replace("from django.db import", "import django_mongodb_backend.fields\nfrom django.db import", 1)
    return HEADER + text


def main() -> None:
    contrib = Path(django.__file__).parent / "contrib"
    for app in APPS:
        target = ROOT / "mongo_migrations" / app
        shutil.rmtree(target, ignore_errors=True)
        target.mkdir(parents=True)
        (target / "__init__.py").write_text("")
        for migration in sorted((contrib / app / "migrations").glob("0*.py")):
            (target / migration.name).write_text(derive(migration.read_text()))
    (ROOT / "mongo_migrations" / "__init__.py").write_text("")
    print(f"mongo_migrations derived from Django {django.get_version()}")


if __name__ == "__main__":
    main()
