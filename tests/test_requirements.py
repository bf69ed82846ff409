"""The lock files: complete, hashed, and the development lock runs the same runtime pins as production."""

import re
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

ROOT = Path(__file__).resolve().parent.parent


def locked(path: Path) -> dict[str, tuple[str, list[str]]]:
    """{name: (version, hashes)} of a pip-compile --generate-hashes lock file."""
    pins = {}
    text = path.read_text().replace("\\\n", " ")
    for line in text.splitlines():
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        match = re.match(r"^([A-Za-z0-9_.\-]+)==(\S+)\s*(.*)$", line)
        assert match, f"{path.name}: not an exact pin: {line!r}"
        name, version, rest = match.groups()
        pins[canonicalize_name(name)] = (version, re.findall(r"--hash=sha256:([0-9a-f]{64})", rest))
    return pins


def direct(path: Path) -> list[Requirement]:
    requirements = []
    for line in path.read_text().splitlines():
        line = line.split("#", 1)[0].strip()
        if line and not line.startswith("-"):
            requirements.append(Requirement(line))
    return requirements


def test_every_locked_package_is_pinned_with_hashes():
    for name in ("requirements.txt", "requirements-dev.txt", "requirements-mongo-test.txt"):
        for package, (_version, hashes) in locked(ROOT / name).items():
            assert hashes, f"{name}: {package} has no hash"


def test_the_locks_satisfy_their_direct_requirements():
    for source, lock in (
        ("requirements.in", "requirements.txt"),
        ("requirements-dev.in", "requirements-dev.txt"),
        ("requirements-mongo-test.in", "requirements-mongo-test.txt"),
    ):
        pins = locked(ROOT / lock)
        for requirement in direct(ROOT / source):
            name = canonicalize_name(requirement.name)
            assert name in pins, f"{lock} lacks {requirement.name} (run bin/lock)"
            assert requirement.specifier.contains(pins[name][0], prereleases=True), (
                f"{lock} pins {name}=={pins[name][0]}, {source} asks {requirement} (run bin/lock)"
            )


def test_development_runs_the_runtime_pins():
    runtime, development = locked(ROOT / "requirements.txt"), locked(ROOT / "requirements-dev.txt")
    different = {
        name: (version, development.get(name, ("missing",))[0])
        for name, (version, _hashes) in runtime.items()
        if development.get(name, ("missing",))[0] != version
    }
    assert not different, f"requirements-dev.txt differs from requirements.txt (runtime, dev): {different}"


def test_workers_dependencies_are_in_the_runtime_lock():
    # kombu's Redis transport imports packaging; a lock without it cannot run a worker (issue 11).
    runtime = locked(ROOT / "requirements.txt")
    for package in ("celery", "kombu", "redis", "packaging", "gunicorn", "django-guid", "python-json-logger"):
        assert package in runtime, package
