"""Secrets the embedded default makes for itself on first use: random per installation, kept in var/.

Used for the development JWT signing key (tenants/keys.py) and the test-payment
webhook secret (billing/payments.py). Nothing is derived from SECRET_KEY or any
value in the repository, so two installations never share one.
"""

import os
import secrets
import uuid
from pathlib import Path


def write_once(path: Path, content: bytes) -> None:
    """Create `path` (mode 0600) holding `content` unless it exists; concurrent first runs agree on one file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    # Unique per call, not per process: threads of one process start at the same time too.
    temporary = path.with_suffix(f".{os.getpid()}.{uuid.uuid4().hex}.tmp")
    fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "wb") as handle:
        handle.write(content)
    try:
        os.link(temporary, path)  # fails if another process won the race; theirs is kept
    except FileExistsError:
        pass
    finally:
        temporary.unlink()


def local_secret(path: Path) -> str:
    """The random secret stored at `path`, made (256 bits) on first use."""
    if not path.exists():
        write_once(path, secrets.token_urlsafe(32).encode())
    return path.read_text().strip()
