"""Move every row of this installation's database into another one (`manage.py db_move`).

The current database (settings' DATABASE_URL) is the source. The target is written by a child process
(eventsaas/db_move_writer.py) that runs with DATABASE_URL set to the target, so each side works with its
own models as its backend defines them: on MongoDB Django's contrib models have ObjectId keys
(eventsaas/mongodb.py), on SQL integer keys. The two talk over the child's stdin and stdout.

What is copied, and how rows keep their identity (docs/deployment.md, "From one machine to a cluster"):

- Models with their own keys (every model of ours has a UUID key; users too; sessions are keyed by their
  session key) are copied with the same key, so every reference between them survives unchanged.
- Models with a database-made key (auth groups, the membership rows of users in groups and of
  permissions in users and groups, the admin's log) get new keys on the target. Their references to
  content types, permissions and groups travel as natural keys ("tenants.user", "add_user") and are
  resolved on the target. They are matched by their content, not their key.
- Content types and permissions are not copied: `migrate` creates them on the target.
- django-axes' tables are not copied: they hold lockout counters and login attempts, security state
  that is rebuilt by the next logins and that a move should not carry over.

Rows are read in key order, a batch at a time (keyset pagination: memory stays bounded whatever the
table's size), parents before children. A re-run with `resume=True` asks the target which keys of a
batch it already holds and inserts only the others, so an interrupted move continues where it stopped.

Verification reads both databases again and compares, per model, the row count and an order-free
checksum (the sum of a hash per row) over the row's key and every field, as `_canonical` normalises
them. Datetimes are compared to the millisecond, which is what MongoDB stores.
"""

from __future__ import annotations

import hashlib
import json
import os
import pickle
import subprocess
import sys
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, time
from decimal import Decimal
from typing import IO

from django.apps import apps
from django.conf import settings
from django.db import models

from eventsaas.fields import truncate_to_milliseconds

BATCH_SIZE = 2000
CHECKSUM_MODULUS = 2**128

#: Models never copied, with the reason the report gives.
SKIPPED_APPS = {"axes": "login lockout counters and attempt logs: security state, rebuilt by the next logins"}
SKIPPED_MODELS = {
    "contenttypes.contenttype": "created by migrate on the target; references travel as natural keys",
    "auth.permission": "created by migrate on the target; references travel as natural keys",
}


class MoveError(Exception):
    """The move cannot start or go on; the message says why."""


# --- the plan: which models, in which order, with which fields --------------------------------------------


def _has_database_made_key(model) -> bool:
    return isinstance(model._meta.pk, models.fields.AutoFieldMixin)


@dataclass
class ModelPlan:
    """How one model's rows travel: `columns` are attnames; natural-key columns hold natural keys."""

    label: str
    model: type[models.Model]
    columns: list[str]
    natural_key_columns: dict[str, type[models.Model]] = field(default_factory=dict)
    keeps_keys: bool = True


def skipped_models() -> dict[str, str]:
    """label -> why it is not copied."""
    skipped = {}
    for model in apps.get_models(include_auto_created=True):
        label = model._meta.label_lower
        if model._meta.app_label in SKIPPED_APPS:
            skipped[label] = SKIPPED_APPS[model._meta.app_label]
        elif label in SKIPPED_MODELS:
            skipped[label] = SKIPPED_MODELS[label]
    return skipped


def move_plan() -> list[ModelPlan]:
    """Every copied model, parents before children (both processes compute the same plan)."""
    skipped = skipped_models()
    candidates = {
        model._meta.label_lower: model
        for model in apps.get_models(include_auto_created=True)
        if model._meta.managed and not model._meta.proxy and model._meta.label_lower not in skipped
    }
    plans = {}
    for label, model in candidates.items():
        keeps_keys = not _has_database_made_key(model)
        columns, natural = [], {}
        for f in model._meta.concrete_fields:
            if f.primary_key and not keeps_keys:
                continue
            columns.append(f.attname)
            related = f.related_model if f.is_relation else None
            if related is not None and _has_database_made_key(related):
                if not hasattr(related._default_manager, "get_by_natural_key"):
                    raise MoveError(f"{label}.{f.name} refers to a model without natural keys")
                natural[f.attname] = related
        plans[label] = ModelPlan(label, model, columns, natural, keeps_keys)

    ordered, placed = [], set()

    def place(label: str, path: tuple[str, ...]) -> None:
        if label in placed:
            return
        if label in path:
            raise MoveError("Circular references between models: " + " -> ".join((*path, label)))
        model = plans[label].model
        for f in model._meta.concrete_fields:
            parent = f.related_model._meta.label_lower if f.is_relation and f.related_model is not None else None
            if parent and parent != label and parent in plans:
                place(parent, (*path, label))
        placed.add(label)
        ordered.append(plans[label])

    for label in sorted(plans):
        place(label, ())
    return ordered


# --- rows: reading in batches, natural keys, checksums ------------------------------------------------------


class NaturalKeys:
    """pk <-> natural key of the small models that database-made keys point at (content types, groups...)."""

    def __init__(self) -> None:
        self._by_pk: dict[type[models.Model], dict] = {}
        self._by_key: dict[type[models.Model], dict] = {}

    def forget(self, model) -> None:
        self._by_pk.pop(model, None)
        self._by_key.pop(model, None)

    def _load(self, model) -> None:
        if model not in self._by_pk:
            self._by_pk[model] = {obj.pk: tuple(obj.natural_key()) for obj in model._default_manager.all()}
            self._by_key[model] = {key: pk for pk, key in self._by_pk[model].items()}

    def natural_key(self, model, pk):
        if pk is None:
            return None
        self._load(model)
        return self._by_pk[model][pk]

    def pk(self, model, natural_key):
        if natural_key is None:
            return None
        self._load(model)
        if natural_key not in self._by_key[model]:
            if model._meta.label_lower == "contenttypes.contenttype":
                # A content type of a model this code no longer has (left behind by an old version).
                obj, _created = model._default_manager.get_or_create(app_label=natural_key[0], model=natural_key[1])
                self.forget(model)
                return obj.pk
            raise MoveError(f"{model._meta.label} {natural_key!r} does not exist on the target")
        return self._by_key[model][natural_key]


def read_batches(plan: ModelPlan, natural_keys: NaturalKeys, batch_size: int = BATCH_SIZE) -> Iterator[list]:
    """The model's rows as lists of column values, in key order, `batch_size` at a time."""
    pk_name = plan.model._meta.pk.attname
    # The key first, for the next batch's filter; rows travel in the plan's column order.
    columns = [pk_name, *(c for c in plan.columns if c != pk_name)]
    order = [columns.index(c) for c in plan.columns]
    natural_indexes = [(columns.index(c), m) for c, m in plan.natural_key_columns.items()]
    last = None
    while True:
        queryset = plan.model._default_manager.order_by(pk_name)
        if last is not None:
            queryset = queryset.filter(pk__gt=last)
        fetched = [list(row) for row in queryset.values_list(*columns)[:batch_size]]
        if not fetched:
            return
        last = fetched[-1][0]
        for row in fetched:
            for index, model in natural_indexes:
                row[index] = natural_keys.natural_key(model, row[index])
        rows = [[row[i] for i in order] for row in fetched]
        yield rows
        if len(rows) < batch_size:
            return


def _canonical(value):
    """One spelling of a value, whatever database it was read from."""
    if isinstance(value, datetime):
        return truncate_to_milliseconds(value.astimezone(UTC) if value.tzinfo else value).isoformat()
    if isinstance(value, date | time):
        return value.isoformat()
    if isinstance(value, uuid.UUID):
        return value.hex
    if isinstance(value, Decimal):
        return str(value)
    if isinstance(value, bytes | memoryview):
        return bytes(value).hex()
    if isinstance(value, list | tuple):
        return [_canonical(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _canonical(v) for k, v in value.items()}
    if value is not None and not isinstance(value, str | int | float | bool):
        return str(value)  # an ObjectId
    return value


def row_digest(row) -> int:
    text = json.dumps(_canonical(row), sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return int.from_bytes(hashlib.sha256(text.encode()).digest()[:16], "big")


@dataclass
class Tally:
    rows: int = 0
    checksum: int = 0

    def add(self, row) -> None:
        self.rows += 1
        self.checksum = (self.checksum + row_digest(row)) % CHECKSUM_MODULUS

    def as_tuple(self) -> tuple[int, str]:
        return self.rows, f"{self.checksum:032x}"


def model_tally(plan: ModelPlan, natural_keys: NaturalKeys, batch_size: int = BATCH_SIZE) -> tuple[int, str]:
    tally = Tally()
    for rows in read_batches(plan, natural_keys, batch_size):
        for row in rows:
            tally.add(row)
    return tally.as_tuple()


# --- the target process ----------------------------------------------------------------------------------------


class TargetWriter:
    """The child process that writes the target: requests and answers are pickles on its stdin/stdout."""

    def __init__(self, target_url: str):
        env = {**os.environ, "DATABASE_URL": target_url, "DJANGO_SETTINGS_MODULE": settings.SETTINGS_MODULE}
        env.pop("MONGODB_URI", None)
        self._process = subprocess.Popen(
            [sys.executable, "-m", "eventsaas.db_move_writer"],
            cwd=settings.BASE_DIR,
            env=env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
        )

    def call(self, operation: str, **arguments):
        # The child is this program itself, started just above: its pickles are trusted.
        requests, answers = self._pipes()
        try:
            pickle.dump((operation, arguments), requests, protocol=pickle.HIGHEST_PROTOCOL)
            requests.flush()
            status, answer = pickle.load(answers)
        except (BrokenPipeError, EOFError) as exc:
            raise MoveError("The target's writer process stopped (its error is printed above)") from exc
        if status == "error":
            raise MoveError(answer)
        return answer

    def _pipes(self) -> tuple[IO[bytes], IO[bytes]]:
        """The child's stdin and stdout: always pipes (Popen above asks for both)."""
        requests, answers = self._process.stdin, self._process.stdout
        if requests is None or answers is None:
            raise MoveError("The target's writer process has no pipes")
        return requests, answers

    def close(self) -> None:
        if self._process.poll() is None:
            try:
                self._pipes()[0].close()
            except BrokenPipeError:
                pass
            try:
                self._process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self._process.kill()
                self._process.wait()

    def __enter__(self):
        return self

    def __exit__(self, *exc_info):
        self.close()


# --- the move --------------------------------------------------------------------------------------------------


@dataclass
class ModelCheck:
    label: str
    source_rows: int
    target_rows: int
    source_checksum: str
    target_checksum: str

    @property
    def matches(self) -> bool:
        return self.source_rows == self.target_rows and self.source_checksum == self.target_checksum


@dataclass
class MoveReport:
    copied: dict[str, int] = field(default_factory=dict)
    checks: list[ModelCheck] = field(default_factory=list)
    skipped: dict[str, str] = field(default_factory=dict)

    @property
    def matches(self) -> bool:
        return all(check.matches for check in self.checks)


Progress = Callable[[str, int], Callable[[int], None]]


def database_move(
    *,
    target_url: str,
    resume: bool = False,
    batch_size: int = BATCH_SIZE,
    progress: Progress | None = None,
    after_batch: Callable[[str, int], None] | None = None,
    migrate_output: bool = True,
) -> MoveReport:
    """Migrate the target, copy every model's rows into it, then verify both sides.

    Refuses a target that holds rows of any copied model unless `resume`. `progress(label, total)`
    returns a callback told how many rows each batch handled; `after_batch(label, batch_number)` runs
    after every written batch (tests stop a move halfway with it).
    """
    report = MoveReport(skipped=skipped_models())
    plan = move_plan()
    natural_keys = NaturalKeys()
    with TargetWriter(target_url) as writer:
        writer.call("migrate", verbose=migrate_output)
        occupied = {label: rows for label, rows in writer.call("counts").items() if rows}
        if occupied and not resume:
            held = ", ".join(f"{label} ({rows})" for label, rows in sorted(occupied.items()))
            raise MoveError(
                f"The target already holds data: {held}. Give --resume to continue an interrupted move into it."
            )
        for model_plan in plan:
            total = model_plan.model._default_manager.count()
            advance = progress(model_plan.label, total) if progress else None
            writer.call("begin", label=model_plan.label)
            copied = 0
            for number, rows in enumerate(read_batches(model_plan, natural_keys, batch_size), start=1):
                copied += writer.call("write", label=model_plan.label, rows=rows)
                if advance:
                    advance(len(rows))
                if after_batch:
                    after_batch(model_plan.label, number)
            report.copied[model_plan.label] = copied
        report.checks = database_compare(writer, plan, natural_keys, batch_size)
    return report


def database_compare(writer: TargetWriter, plan, natural_keys, batch_size) -> list[ModelCheck]:
    checks = []
    for model_plan in plan:
        source_rows, source_checksum = model_tally(model_plan, natural_keys, batch_size)
        target_rows, target_checksum = writer.call("tally", label=model_plan.label)
        checks.append(ModelCheck(model_plan.label, source_rows, target_rows, source_checksum, target_checksum))
    return checks


def database_verify(*, target_url: str, batch_size: int = BATCH_SIZE) -> list[ModelCheck]:
    """Only the verification: compare every copied model of this database with the target's."""
    plan = move_plan()
    with TargetWriter(target_url) as writer:
        return database_compare(writer, plan, NaturalKeys(), batch_size)
