"""The rsvp tests' guests: Anna and Lisa Müller of the `household` fixture (tests/conftest.py)."""

import pytest


@pytest.fixture
def anna(household):
    return household[0]


@pytest.fixture
def lisa(household):
    return household[1]
