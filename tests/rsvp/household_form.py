"""Posting the household form (rsvp.forms.HouseholdFormSet) the way the browser does: one row per member.

Rows are in the page's order: the person answering first, then the others by first name.
"""


def row(attending: str, num_guests="", **fields) -> dict:
    """One member's row: attending is "yes", "no" or "later"; fields like dietary="", q_meal="Fish"."""
    return {"attending": attending, "num_guests": str(num_guests), **fields}


def household_post(*rows: dict, confirmed: bool = False, **extra) -> dict:
    data = {
        "m-TOTAL_FORMS": str(len(rows)),
        "m-INITIAL_FORMS": str(len(rows)),
        "m-MIN_NUM_FORMS": "0",
        "m-MAX_NUM_FORMS": "1000",
        **extra,
    }
    for index, fields in enumerate(rows):
        for name, value in fields.items():
            data[f"m-{index}-{name}"] = value
    if confirmed:
        data["confirmed"] = "on"
    return data
