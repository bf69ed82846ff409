from django.core.management.base import BaseCommand, CommandError
from tqdm import tqdm

from eventsaas.db_move import BATCH_SIZE, MoveError, database_move, database_verify


class Command(BaseCommand):
    help = (
        "Copy every row of this installation's database (DATABASE_URL) into another PostgreSQL or MongoDB "
        "database, keeping every key, then verify both sides model by model (docs/deployment.md)."
    )

    def add_arguments(self, parser):
        parser.add_argument("--to", required=True, metavar="DATABASE_URL", help="The target database's URL.")
        parser.add_argument(
            "--resume", action="store_true", help="Continue an interrupted move: keep the rows already there."
        )
        parser.add_argument(
            "--verify-only", action="store_true", help="Copy nothing: only compare this database with the target."
        )
        parser.add_argument("--batch-size", type=int, default=BATCH_SIZE, help="Rows per read and write.")

    def handle(self, *args, **options):
        if options["batch_size"] < 1:
            raise CommandError("--batch-size must be at least 1")
        bars = []

        def progress(label, total):
            # One bar per model, closed when the next model starts: they stack as a log of the move.
            for bar in bars:
                bar.close()
            bar = tqdm(total=total, desc=label, unit="rows", file=self.stderr._out, dynamic_ncols=True)
            bars.append(bar)
            return bar.update

        try:
            if options["verify_only"]:
                checks, skipped = database_verify(target_url=options["to"], batch_size=options["batch_size"]), {}
            else:
                report = database_move(
                    target_url=options["to"],
                    resume=options["resume"],
                    batch_size=options["batch_size"],
                    progress=progress,
                    migrate_output=options["verbosity"] > 0,
                )
                checks, skipped = report.checks, report.skipped
        except MoveError as exc:
            raise CommandError(str(exc)) from exc
        finally:
            for bar in bars:
                bar.close()

        self.stdout.write(verification_table(checks))
        for label, reason in sorted(skipped.items()):
            self.stdout.write(f"not copied: {label}: {reason}")
        differing = [check.label for check in checks if not check.matches]
        if differing:
            raise CommandError("The target differs from this database in: " + ", ".join(differing))
        self.stdout.write(self.style.SUCCESS(f"Verified: {len(checks)} models, every count and checksum matches."))


def verification_table(checks) -> str:
    header = ("model", "source rows", "target rows", "source checksum", "target checksum", "")
    rows = [
        (
            check.label,
            str(check.source_rows),
            str(check.target_rows),
            check.source_checksum[:16],
            check.target_checksum[:16],
            "ok" if check.matches else "DIFFERS",
        )
        for check in checks
    ]
    widths = [max(len(row[i]) for row in [header, *rows]) for i in range(len(header))]
    lines = []
    for row in [header, *rows]:
        cells = [
            cell.rjust(width) if index in (1, 2) else cell.ljust(width)
            for index, (cell, width) in enumerate(zip(row, widths, strict=True))
        ]
        lines.append("  ".join(cells).rstrip())
    lines.insert(1, "  ".join("-" * width for width in widths).rstrip())
    return "\n".join(lines)
