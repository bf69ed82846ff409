#!/usr/bin/env python
"""What a gettext catalogue still lacks, read with polib:

    python scripts/po_check.py locale/es/LC_MESSAGES/django.po

Lists every problem and exits 1 when there is any:
- fuzzy: msgfmt leaves fuzzy entries out, so the page stays in English (a fuzzy header loses the charset too);
- untranslated: an empty msgstr, or fewer plural forms than the language's Plural-Forms nplurals;
- obsolete: `#~` entries nothing uses any more (bin/i18n drops them with makemessages --no-obsolete);
- placeholders: a translation whose %(name)s / %s placeholders differ from the source's (a KeyError or
  a missing value at run time).
bin/i18n runs it after each refresh; tests/test_i18n.py runs the same checks on the committed catalogue.
"""

import re
import sys
from dataclasses import dataclass
from pathlib import Path

import polib

PLACEHOLDER = re.compile(r"%\(\w+\)[sdfi]|%[sdfi]")
NPLURALS = re.compile(r"nplurals\s*=\s*(\d+)")


@dataclass(frozen=True)
class Problem:
    kind: str  # "fuzzy", "untranslated", "obsolete" or "placeholders"
    msgid: str
    detail: str = ""

    def __str__(self) -> str:
        return f"[{self.kind}] {self.msgid!r}" + (f": {self.detail}" if self.detail else "")


def nplurals(catalogue: polib.POFile) -> int:
    match = NPLURALS.search(catalogue.metadata.get("Plural-Forms", ""))
    return int(match.group(1)) if match else 2


def translations(entry: polib.POEntry) -> list[str]:
    """The msgstr, or every plural form in order."""
    if entry.msgid_plural:
        return [entry.msgstr_plural[index] for index in sorted(entry.msgstr_plural)]
    return [entry.msgstr]


def live_entries(catalogue: polib.POFile) -> list[polib.POEntry]:
    """The entries gettext uses: neither obsolete nor the header."""
    return [entry for entry in catalogue if not entry.obsolete]


def _placeholders_differ(entry: polib.POEntry) -> list[str]:
    sources = [entry.msgid] + ([entry.msgid_plural] if entry.msgid_plural else [])
    expected = set().union(*(PLACEHOLDER.findall(source) for source in sources))
    return [form for form in translations(entry) if form.strip() and set(PLACEHOLDER.findall(form)) != expected]


def catalogue_problems(path: str | Path) -> list[Problem]:
    """Every fuzzy, untranslated, obsolete or placeholder-breaking entry of the PO file at `path`."""
    catalogue = polib.pofile(str(path))
    problems = []
    if catalogue.metadata_is_fuzzy:
        problems.append(Problem("fuzzy", "", "the header (msgfmt would skip it, and the charset with it)"))
    forms = nplurals(catalogue)
    for entry in live_entries(catalogue):
        if entry.fuzzy:
            problems.append(Problem("fuzzy", entry.msgid))
        texts = translations(entry)
        if entry.msgid_plural and len(texts) != forms:
            problems.append(Problem("untranslated", entry.msgid, f"{len(texts)} plural forms instead of {forms}"))
        elif any(not text.strip() for text in texts):
            problems.append(Problem("untranslated", entry.msgid))
        for form in _placeholders_differ(entry):
            problems.append(Problem("placeholders", entry.msgid, repr(form)))
    problems += [Problem("obsolete", entry.msgid) for entry in catalogue.obsolete_entries()]
    return problems


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        sys.stderr.write("usage: scripts/po_check.py PATH_TO.po\n")
        return 2
    path = argv[0]
    problems = catalogue_problems(path)
    if not problems:
        sys.stdout.write(f"Every entry is translated; commit {path} and {path[:-3]}.mo.\n")
        return 0
    lines = [f"\n{len(problems)} entries to fix in {path}:", *(f"  {problem}" for problem in problems)]
    lines.append(
        "Translate them (fill every msgstr / msgstr[n], keep the placeholders, delete the '#, fuzzy' lines), "
        "then run bin/i18n again (it also drops obsolete entries)."
    )
    sys.stdout.write("\n".join(lines) + "\n")
    return 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
