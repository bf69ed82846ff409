"""Share of annotated function parameters and returns in the app code (issue 14).

Counts every parameter of every function and method (positional, keyword-only, *args, **kwargs),
except a method's leading self/cls, in tenants, events, guests, rsvp, billing and eventsaas, leaving
out tests, migrations and mongo_migrations. Returns are counted per function, leaving out __init__
(its return is always None and not asked for by mypy when a parameter is typed).

    .venv/bin/python scripts/annotation_share.py          # the totals
    .venv/bin/python scripts/annotation_share.py --apps   # and one line per app
"""

import ast
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
APPS = ["tenants", "events", "guests", "rsvp", "billing", "eventsaas"]
SKIPPED_DIRS = {"tests", "migrations", "mongo_migrations", "__pycache__"}


def app_files(app):
    for path in sorted((ROOT / app).rglob("*.py")):
        if not SKIPPED_DIRS.intersection(path.relative_to(ROOT).parts):
            yield path


def function_counts(node, in_class):
    """(parameters, annotated parameters, returns counted, annotated returns) of one function."""
    arguments = node.args
    positional = arguments.posonlyargs + arguments.args
    if in_class and positional and positional[0].arg in ("self", "cls", "mcs"):
        is_static = any(isinstance(d, ast.Name) and d.id == "staticmethod" for d in node.decorator_list)
        if not is_static:
            positional = positional[1:]
    params = positional + arguments.kwonlyargs
    params += [a for a in (arguments.vararg, arguments.kwarg) if a is not None]
    annotated = sum(1 for a in params if a.annotation is not None)
    counts_return = node.name != "__init__"
    return len(params), annotated, int(counts_return), int(counts_return and node.returns is not None)


def file_counts(path):
    tree = ast.parse(path.read_text(), filename=str(path))
    totals = [0, 0, 0, 0]

    def visit(node, in_class):
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef):
                for i, n in enumerate(function_counts(child, in_class)):
                    totals[i] += n
                visit(child, False)
            elif isinstance(child, ast.ClassDef):
                visit(child, True)
            else:
                visit(child, in_class)

    visit(tree, False)
    return totals


def share(part, whole):
    return f"{part}/{whole} = {100 * part / whole:.1f}%" if whole else "0/0"


def main():
    grand = [0, 0, 0, 0]
    for app in APPS:
        app_totals = [0, 0, 0, 0]
        for path in app_files(app):
            for i, n in enumerate(file_counts(path)):
                app_totals[i] += n
        for i, n in enumerate(app_totals):
            grand[i] += n
        if "--apps" in sys.argv:
            print(
                f"{app:10} parameters {share(app_totals[1], app_totals[0]):22} "
                f"returns {share(app_totals[3], app_totals[2])}"
            )
    print(f"annotated parameters: {share(grand[1], grand[0])}")
    print(f"annotated returns:    {share(grand[3], grand[2])}")


if __name__ == "__main__":
    main()
