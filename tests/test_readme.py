"""The README's quick start is read by scripts: exactly two commands, and CI runs the second."""

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def quick_start_commands() -> list[str]:
    # The same reading as ../shared/tools/quickstart.py: fenced blocks up to the next level-1/2 heading.
    text = (ROOT / "README.md").read_text() + "\n# end"
    section = re.search(r"^#+\s*quick\s*-?\s*start.*?$(.*?)(?=^#{1,2}\s)", text, re.I | re.M | re.S)
    assert section, "README has no Quick start section"
    blocks = re.findall(r"```[^\n]*\n(.*?)```", section.group(1), re.S)
    return [b.strip() for b in blocks if b.strip()]


def test_quick_start_has_exactly_the_run_and_test_commands():
    assert quick_start_commands() == ["bin/run", "bin/test"]


def test_ci_runs_the_readme_test_command():
    ci = (ROOT / ".ci" / "run").read_text()
    assert re.search(r"^bin/test\b", ci, re.M)
    assert re.search(r"^DATABASE_URL=\S*postgres\S* bin/test\b", ci, re.M)


def test_ci_runs_the_mongodb_pass_after_the_sql_passes_and_the_readme_tells_how():
    ci = (ROOT / ".ci" / "run").read_text()
    postgres = re.search(r"^DATABASE_URL=\S*postgres\S* bin/test\b", ci, re.M)
    mongodb = re.search(r"^bin/test-mongo\b", ci, re.M)
    assert postgres and mongodb and mongodb.start() > postgres.start()
    readme = (ROOT / "README.md").read_text()
    assert "bin/test-mongo" in readme and "bin/test-mongo" not in "\n".join(quick_start_commands())
