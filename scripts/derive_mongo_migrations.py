#!/usr/bin/env python
"""Derive mongo_migrations/ from the migrations of Django's contrib apps and of third-party apps.

On MongoDB, admin, auth, contenttypes and django-axes use ObjectIdAutoField
primary keys (eventsaas.mongo_apps). Their migrations are the originals, with
AutoField swapped for ObjectIdAutoField; the names stay the same so our
migrations' dependencies (e.g. tenants -> auth.0012) resolve on every backend.
django-axes keeps its login counters in the cache (AxesCacheHandler), so its
tables exist but stay empty.

Run after upgrading Django or django-axes, then check with
    DATABASE_URL=mongodb://127.0.0.1:27017/eventsaas python manage.py makemigrations --check --dry-run
Against a real server, `python manage.py makemigrations admin auth contenttypes`
with the MongoDB settings regenerates them the backend's way; see docs/mongodb.md.
"""

import re
import shutil
from pathlib import Path

import axes
import django

ROOT = Path(__file__).resolve().parent.parent
CONTRIB = Path(django.__file__).parent / "contrib"
# app label -> (who wrote it, the folder of its original migrations)
APPS = {
    "admin": ("Django", CONTRIB / "admin" / "migrations"),
    "auth": ("Django", CONTRIB / "auth" / "migrations"),
    "contenttypes": ("Django", CONTRIB / "contenttypes" / "migrations"),
    "axes": ("django-axes", Path(axes.__file__).parent / "migrations"),
}
HEADER = "# Derived from {origin}'s own migration by scripts/derive_mongo_migrations.py; do not edit.\n"


def derive(source: str, origin: str = "Django") -> str:
    text = re.sub(r"\bmodels\.AutoField\(", "django_mongodb_backend.fields.ObjectIdAutoField(", source)
    if "django_mongodb_backend" in text:
        text = text.replace("from django.db import", "import django_mongodb_backend.fields\nfrom django.db import", 1)
    return HEADER.format(origin=origin) + text


def main() -> None:
    for app, (origin, source) in APPS.items():
        target = ROOT / "mongo_migrations" / app
        shutil.rmtree(target, ignore_errors=True)
        target.mkdir(parents=True)
        (target / "__init__.py").write_text("")
        for migration in sorted(source.glob("0*.py")):
            (target / migration.name).write_text(derive(migration.read_text(), origin))
    (ROOT / "mongo_migrations" / "__init__.py").write_text("")
    print(f"mongo_migrations derived from Django {django.get_version()} and django-axes {axes.__version__}")


if __name__ == "__main__":
    main()
