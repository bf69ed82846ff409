#!/usr/bin/env python
"""Functions of the app code longer than a limit (60 lines by default), longest first:

    python scripts/long_functions.py [--limit 60] [--root .]

A function's length runs from its `def` line to its last line (docstring and comments included, decorators
not); nested functions count inside their parent and on their own. Tests and migrations are not app code.
Exit status 0 either way: the list is for reading (#14: "no app function over about 60 lines without a reason").
"""

import argparse
import ast
from pathlib import Path

APP_PACKAGES = ("tenants", "events", "guests", "rsvp", "billing", "eventsaas")
NOT_APP_CODE = {"tests", "migrations"}


def long_functions(root: Path, limit: int) -> list[tuple[int, str, str]]:
    """(lines, "path:line", qualified name) of every function over `limit` lines."""
    found = []
    for package in APP_PACKAGES:
        for path in sorted((root / package).rglob("*.py")):
            if NOT_APP_CODE & set(path.relative_to(root).parts):
                continue
            found += _in_module(path, path.relative_to(root).as_posix(), limit)
    return sorted(found, key=lambda item: (-item[0], item[1]))


def _in_module(path: Path, name: str, limit: int) -> list[tuple[int, str, str]]:
    found = []

    def visit(node: ast.AST, prefix: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef):
                qualified = f"{prefix}{child.name}"
                length = child.end_lineno - child.lineno + 1
                if length > limit:
                    found.append((length, f"{name}:{child.lineno}", qualified))
                visit(child, f"{qualified}.")
            elif isinstance(child, ast.ClassDef):
                visit(child, f"{prefix}{child.name}.")
            else:
                visit(child, prefix)

    visit(ast.parse(path.read_text(encoding="utf-8"), filename=str(path)), "")
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--limit", type=int, default=60)
    parser.add_argument("--root", type=Path, default=Path(__file__).resolve().parent.parent)
    args = parser.parse_args()
    found = long_functions(args.root, args.limit)
    for length, where, qualified in found:
        print(f"{length:4d}  {qualified}  ({where})")
    print(f"{len(found)} functions over {args.limit} lines")


if __name__ == "__main__":
    main()
