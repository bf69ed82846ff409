"""The target side of `manage.py db_move` (eventsaas/db_move.py), run as its child process.

Started with DATABASE_URL set to the target, so the target's models are what its backend defines
(ObjectId keys for Django's contrib models on MongoDB). Reads pickled requests from stdin, answers
with pickles on stdout; everything people should read (migrate's output, tracebacks) goes to stderr.
"""

import pickle
import sys
import traceback
from collections import Counter
from collections.abc import Callable
from typing import Any


def main() -> None:
    requests, answers = sys.stdin.buffer, sys.stdout.buffer
    # Nothing but answers may reach stdout.
    sys.stdout = sys.stderr

    import django

    django.setup()

    from django.core.management import call_command

    from eventsaas.db_move import MoveError, NaturalKeys, model_tally, move_plan, read_batches, row_digest

    plan = {p.label: p for p in move_plan()}
    for model_plan in plan.values():
        # Rows keep the stamps they were written with: no field may stamp "now" on the copy.
        for f in model_plan.model._meta.concrete_fields:
            if getattr(f, "auto_now", False) or getattr(f, "auto_now_add", False):
                f.auto_now = f.auto_now_add = False  # type: ignore[attr-defined]  # date fields only: checked above
    natural_keys = NaturalKeys()
    present_by_content: Counter = Counter()

    def write(label: str, rows: list) -> int:
        model_plan = plan[label]
        model = model_plan.model
        if model_plan.keeps_keys:
            pk_index = model_plan.columns.index(model._meta.pk.attname)
            present = set(
                model._default_manager.filter(pk__in=[row[pk_index] for row in rows]).values_list("pk", flat=True)
            )
            missing = [row for row in rows if model._meta.pk.to_python(row[pk_index]) not in present]
        else:
            # Rows without a key of their own are matched by content (their natural keys included).
            missing = []
            for row in rows:
                digest = row_digest(row)
                if present_by_content[digest]:
                    present_by_content[digest] -= 1
                else:
                    missing.append(row)
        objs = []
        for row in missing:
            values = dict(zip(model_plan.columns, row, strict=True))
            for column, related in model_plan.natural_key_columns.items():
                values[column] = natural_keys.pk(related, tuple(values[column]) if values[column] else None)
            objs.append(model(**values))
        model._default_manager.bulk_create(objs, batch_size=len(objs) or None)
        return len(objs)

    def begin(label: str) -> None:
        present_by_content.clear()
        model_plan = plan[label]
        if not model_plan.keeps_keys:
            for rows in read_batches(model_plan, natural_keys):
                present_by_content.update(row_digest(row) for row in rows)

    def end(label: str) -> None:
        # Later models refer to this one's rows by natural key (groups): read its keys afresh.
        natural_keys.forget(plan[label].model)

    operations: dict[str, Callable[..., Any]] = {
        "migrate": lambda verbose: call_command(
            "migrate", interactive=False, verbosity=1 if verbose else 0, stdout=sys.stderr
        ),
        "counts": lambda: {label: p.model._default_manager.count() for label, p in plan.items()},
        "begin": begin,
        "write": lambda label, rows: _write_and_end(write, end, label, rows),
        "tally": lambda label: model_tally(plan[label], natural_keys),
    }

    while True:
        try:
            operation, arguments = pickle.load(requests)
        except EOFError:
            return
        try:
            answer = ("ok", operations[operation](**arguments))
        except MoveError as exc:
            answer = ("error", str(exc))
        except Exception as exc:  # noqa: BLE001 - reported to the parent, which stops the move
            traceback.print_exc(file=sys.stderr)
            answer = ("error", f"{type(exc).__name__} on the target: {exc}")
        pickle.dump(answer, answers, protocol=pickle.HIGHEST_PROTOCOL)
        answers.flush()


def _write_and_end(write, end, label, rows):
    written = write(label, rows)
    end(label)
    return written


if __name__ == "__main__":
    main()
