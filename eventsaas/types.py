"""Types the services share: the "not given" marker of their keyword parameters."""

import enum
from typing import Any


class NotGiven(enum.Enum):
    """A keyword the caller left out: an update leaves that field alone, a create keeps the model's default.

    Not None, because None is a value some fields take (no RSVP deadline, no sales end).
    """

    NOT_GIVEN = "NOT_GIVEN"

    def __repr__(self) -> str:
        return "NOT_GIVEN"


NOT_GIVEN = NotGiven.NOT_GIVEN


def given(**values: Any) -> dict[str, Any]:
    """The keywords a caller gave, by name: those whose value is not NOT_GIVEN."""
    return {name: value for name, value in values.items() if value is not NOT_GIVEN}
