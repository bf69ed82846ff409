"""Launcher of the MongoDB wire-protocol server the MongoDB test pass runs against (bin/test-mongo).

The server is SecantusDB (PyPI ``SecantusDB``, pinned in requirements-mongo-test.txt,
GPL-2.0): a MongoDB emulator written in Python that speaks the real wire protocol,
stores data in WiredTiger and answers as mongod 8.2 in a single-node replica set
named ``secantus``. It is a test tool run as a separate process from its own venv
(``.venv-mongo``); nothing in the product imports it, and this file imports it only
inside ``main()``, which runs in that venv.

Run as ``.venv-mongo/bin/python tests/support/mongo_server.py --data-dir DIR
[--port N] [--ready-file PATH]``. It starts the emulator through its own CLI
(``secantus.cli.main``) on 127.0.0.1, with its data in DIR and an empty config
file (so no ``secantusd.toml`` lying around is picked up), after installing the
fixes below. Once the port accepts connections it writes the port number to
``--ready-file``. SIGTERM/SIGINT stop it cleanly (the CLI's own handlers).

Fixes for emulator bugs (docs/mongodb.md lists them; check a failure of the MongoDB
pass against that list first):

- ``$project`` and ``$addFields``/``$set`` evaluate a nested object without
  operators, ``{"a": {"b": <expr or 1>}}``, as an object *expression* (the
  whole field ``a`` becomes ``{"b": <value>}``, and an inclusion ``1`` becomes
  the number 1). mongod reads it as the dotted path ``"a.b"``: an inclusion of
  ``a.b``, or a computed ``a.b`` merged into the existing ``a``.
  django-mongodb-backend emits that form for ``select_related`` with
  ``order_by`` on a joined field and for ``values_list()`` across a join; with
  the emulator's reading ``select_related`` gives ``tenant=None`` and
  ``values_list("user__email")`` gives ``1``. ``nested_fields_as_paths`` rewrites
  the stage to dotted paths before the emulator evaluates it, wherever the stage
  runs (top level, ``$facet``, ``$lookup`` sub-pipelines, pipeline updates).
"""

from __future__ import annotations

import argparse
import socket
import sys
import threading
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

#: The emulator version these fixes were written for; another one must be checked again.
SECANTUS_VERSION = "0.7.0b3"
#: The replica set the emulator advertises (the test URL's ``replicaSet=``).
REPLICA_SET = "secantus"
#: The stages whose field specifications mongod reads as paths (see the module docstring).
FIELD_SPEC_STAGES = ("$project", "$addFields", "$set")


def _is_nested_field_spec(value: Any) -> bool:
    """A non-empty object none of whose keys is an operator: sub-fields, not an expression."""
    return (
        isinstance(value, Mapping)
        and bool(value)
        and all(isinstance(key, str) and not key.startswith("$") for key in value)
    )


def nested_fields_as_paths(spec: Any) -> Any:
    """``{"a": {"b": X, "c": {"d": Y}}, "e": Z}`` -> ``{"a.b": X, "a.c.d": Y, "e": Z}``, as mongod reads it.

    Operator expressions (``{"$concat": [...]}``), literals, arrays and empty
    objects are values and stay as they are; anything that is not a mapping is
    returned unchanged so that the emulator reports its own error.
    """
    if not isinstance(spec, Mapping):
        return spec
    flat: dict[str, Any] = {}
    for key, value in spec.items():
        if _is_nested_field_spec(value):
            for sub_path, sub_value in nested_fields_as_paths(value).items():
                flat[f"{key}.{sub_path}"] = sub_value
        else:
            flat[key] = value
    return flat


def _with_paths(handler: Callable) -> Callable:
    def stage(spec, docs, ctx, *args, **kwargs):
        return handler(nested_fields_as_paths(spec), docs, ctx, *args, **kwargs)

    stage.__wrapped__ = handler
    return stage


def install_fixes() -> None:
    """Patch the running emulator (this process only); fails loudly if its internals moved."""
    from importlib.metadata import version

    from secantus import aggregate

    installed = version("SecantusDB")
    if installed != SECANTUS_VERSION:
        raise SystemExit(
            f"SecantusDB {installed} is installed; tests/support/mongo_server.py was written for "
            f"{SECANTUS_VERSION}. Check its fixes against the new version, then update SECANTUS_VERSION."
        )
    stages = aggregate._STAGES  # every stage, nested or not, is dispatched through this table
    for name in FIELD_SPEC_STAGES:
        if not callable(stages.get(name)):
            raise SystemExit(f"SecantusDB has no {name} stage handler to fix; see tests/support/mongo_server.py")
        if not hasattr(stages[name], "__wrapped__"):
            stages[name] = _with_paths(stages[name])


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _announce_when_listening(port: int, ready_file: Path, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1):
                break
        except OSError:
            time.sleep(0.1)
    else:
        return
    partial = ready_file.with_suffix(".tmp")
    partial.write_text(f"{port}\n")
    partial.replace(ready_file)  # readers never see a half-written file


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data-dir", type=Path, required=True, help="WiredTiger data directory (created if missing)")
    parser.add_argument("--port", type=int, default=0, help="port on 127.0.0.1 (default: a free one)")
    parser.add_argument("--ready-file", type=Path, help="written with the port once the server accepts connections")
    parser.add_argument("--log-level", default="WARNING", choices=["DEBUG", "INFO", "WARNING", "ERROR"])
    args = parser.parse_args(argv)

    install_fixes()
    from secantus import cli

    args.data_dir.mkdir(parents=True, exist_ok=True)
    config = args.data_dir.parent / "secantusd-empty.toml"
    config.write_text("# No settings: everything is on the command line (tests/support/mongo_server.py).\n")
    port = args.port or free_port()
    if args.ready_file:
        threading.Thread(target=_announce_when_listening, args=(port, args.ready_file), daemon=True).start()
    return cli.main(
        [
            "--config",
            str(config),
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
            "--storage-path",
            str(args.data_dir),
            "--log-level",
            args.log_level,
        ]
    )


if __name__ == "__main__":
    sys.exit(main())
