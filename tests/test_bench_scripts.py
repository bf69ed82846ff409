"""The benchmark scripts start: each answers --help with its own interpreter, as a user runs them.

A bench script named like a standard library module (bench/http.py did) shadows that module for every other
script in the folder, since Python puts a script's folder first on sys.path; this catches it.
"""

import subprocess
import sys
from pathlib import Path

import pytest

BENCH_DIR = Path(__file__).resolve().parent.parent / "bench"
SCRIPTS = sorted(p.name for p in BENCH_DIR.glob("*.py") if p.name != "bare_django.py")


def test_no_bench_script_is_named_like_a_standard_library_module():
    clashes = sorted(name for name in SCRIPTS if name.removesuffix(".py") in sys.stdlib_module_names)
    assert clashes == []


@pytest.mark.parametrize("script", SCRIPTS)
def test_each_bench_script_answers_help(script):
    result = subprocess.run(
        [sys.executable, str(BENCH_DIR / script), "--help"], capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 0, result.stderr
    assert "usage:" in result.stdout
