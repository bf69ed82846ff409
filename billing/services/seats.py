"""Billing's side of the seats: an order's lines reserved or sold all together or not at all.

The counters are events' (events.services.seats_*); these helpers only apply them line by line and undo.
"""

from collections.abc import Callable
from typing import Any

from events import services as events_services

#: One of events' seat counters (events.services.seats_*): True if it applied.
SeatsChange = Callable[..., bool]


def order_lines_reserve(
    lines: list[dict[str, Any]], *, reserve: SeatsChange | None = None, undo: SeatsChange | None = None
) -> list[str]:
    """Apply `reserve` to every line; on the first failure undo the ones done. Returns the failed type ids."""
    reserve = reserve or events_services.seats_reserve
    undo = undo or events_services.seats_release
    done, failed = [], []
    for line in lines:
        if reserve(ticket_type_id=line["ticket_type"], quantity=line["quantity"]):
            done.append(line)
        else:
            failed.append(line["ticket_type"])
    if failed:
        for line in done:
            undo(ticket_type_id=line["ticket_type"], quantity=line["quantity"])
    return failed
