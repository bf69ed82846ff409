"""Households: connecting guests into one group and taking one out."""

import uuid

import pytest
from django.contrib.messages import get_messages
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from eventsaas.models import AuditLog
from guests.models import Guest
from guests.services import guest_group_connect, guest_group_leave
from rsvp.services import household_for
from tenants.models import Role
from tests.factories import EventFactory, GuestFactory
from tests.support.backends import statements


def _group(guest):
    return Guest.objects.get(pk=guest.pk).group_id


def _guest_updates(queries):
    return statements(queries, "UPDATE", "guests_guest")


def _url(name, tenant, event, **kwargs):
    return reverse(name, kwargs={"tenant_slug": tenant.slug, "event_id": event.pk, **kwargs})


# --- service --------------------------------------------------------------------------------------


def test_connect_puts_the_selected_guests_in_one_new_group_with_one_update(event, owner):
    a, b, c = GuestFactory.create_batch(3, event=event)
    bystander = GuestFactory(event=event)

    with CaptureQueriesContext(connection) as queries:
        group = guest_group_connect(event=event, guest_ids=[a.pk, b.pk, c.pk], acting_user=owner)

    group_id = group.group_id
    assert isinstance(group_id, uuid.UUID) and group.size == 3
    assert _group(a) == _group(b) == _group(c) == group_id
    assert _group(bystander) is None
    assert len(_guest_updates(queries)) == 1
    entry = AuditLog.objects.get(action="guest.group_connected")
    assert entry.data["group_id"] == str(group_id)
    assert sorted(entry.data["guests"]) == sorted(str(g.pk) for g in (a, b, c))


def test_connect_query_count_does_not_grow_with_the_selection(event, owner, django_assert_num_queries):
    guests = GuestFactory.create_batch(12, event=event)

    # read the selection, one update, count the group, one audit entry
    with django_assert_num_queries(4):
        guest_group_connect(event=event, guest_ids=[g.pk for g in guests], acting_user=owner)

    assert Guest.objects.filter(event=event).values("group_id").distinct().count() == 1


def test_connect_reuses_the_existing_group_id(event, household, owner):
    # Tom was added before the Müllers but has no group: the household keeps its id.
    anna, lisa = household
    tom = GuestFactory(event=event, first_name="Tom", last_name="Müller")
    Guest.objects.filter(pk=tom.pk).update(created_at=anna.created_at.replace(year=anna.created_at.year - 1))

    group = guest_group_connect(event=event, guest_ids=[tom.pk, lisa.pk], acting_user=owner)

    assert (group.group_id, group.size) == (anna.group_id, 3)
    assert _group(tom) == _group(lisa) == _group(anna) == anna.group_id
    assert [m.pk for m in household_for(guest=Guest.objects.get(pk=anna.pk)).members] == [lisa.pk, tom.pk]


def test_connect_merges_whole_households_and_keeps_every_members_answer(event, household, owner):
    anna, lisa = household
    Guest.objects.filter(pk=lisa.pk).update(status=Guest.Status.COMING, num_guests=2)
    other_group = uuid.uuid4()
    carmen = GuestFactory(event=event, first_name="Carmen", group_id=other_group)
    pedro = GuestFactory(event=event, first_name="Pedro", group_id=other_group, status=Guest.Status.DECLINED)
    bystander = GuestFactory(event=event, group_id=uuid.uuid4())

    group = guest_group_connect(event=event, guest_ids=[anna.pk, carmen.pk], acting_user=owner)

    assert group.size == 4
    assert {_group(g) for g in (anna, lisa, carmen, pedro)} == {group.group_id}
    assert _group(bystander) != group.group_id
    members = household_for(guest=Guest.objects.get(pk=carmen.pk))
    assert members.head_count == 2  # Lisa's own answer, nothing invented
    assert Guest.objects.get(pk=pedro.pk).status == Guest.Status.DECLINED
    entry = AuditLog.objects.get(action="guest.group_connected")
    assert entry.data["size"] == 4 and entry.data["merged_groups"] == [str(other_group)]


def test_connect_refuses_guests_of_another_event(event, tenant, owner):
    mine = GuestFactory(event=event)
    other_event_guest = GuestFactory(event=EventFactory(tenant=tenant))

    with pytest.raises(ValueError):
        guest_group_connect(event=event, guest_ids=[mine.pk, other_event_guest.pk], acting_user=owner)

    assert _group(mine) is None
    assert _group(other_event_guest) is None
    assert not AuditLog.objects.filter(action="guest.group_connected").exists()


def test_connect_refuses_guests_of_another_tenant(event, owner):
    mine = GuestFactory(event=event)
    foreign = GuestFactory()  # another organization's event

    with pytest.raises(ValueError):
        guest_group_connect(event=event, guest_ids=[mine.pk, foreign.pk], acting_user=owner)

    assert _group(foreign) is None


@pytest.mark.parametrize("how_many", [0, 1])
def test_connect_needs_at_least_two_guests(event, owner, how_many):
    guests = GuestFactory.create_batch(how_many, event=event)

    with pytest.raises(ValueError):
        guest_group_connect(event=event, guest_ids=[g.pk for g in guests], acting_user=owner)

    assert not Guest.objects.filter(group_id__isnull=False).exists()


def test_connect_refuses_unknown_ids(event, owner):
    a, b = GuestFactory.create_batch(2, event=event)

    with pytest.raises(ValueError):
        guest_group_connect(event=event, guest_ids=[a.pk, b.pk, uuid.uuid4()], acting_user=owner)

    assert _group(a) is None and _group(b) is None


def test_leave_takes_one_guest_out_with_one_update_of_that_guest(household, owner):
    anna, lisa = household
    group_id = anna.group_id

    with CaptureQueriesContext(connection) as queries:
        guest_group_leave(guest=lisa, acting_user=owner)

    updates = _guest_updates(queries)
    assert len(updates) == 1
    assert "group_id" in updates[0]
    assert _group(lisa) is None
    assert _group(anna) == group_id
    assert AuditLog.objects.get(action="guest.group_left").data == {"group_id": str(group_id)}


def test_leave_writes_only_the_group_of_a_stale_guest_object(household, owner):
    anna, lisa = household
    # Lisa answers in another tab after the organizer opened her page.
    Guest.objects.filter(pk=lisa.pk).update(status=Guest.Status.DECLINED, dietary="Vegan")

    guest_group_leave(guest=lisa, acting_user=owner)

    saved = Guest.objects.get(pk=lisa.pk)
    assert saved.group_id is None
    assert (saved.status, saved.dietary) == (Guest.Status.DECLINED, "Vegan")


def test_after_leaving_the_households_are_separate(household, owner):
    anna, lisa = household

    guest_group_leave(guest=lisa, acting_user=owner)

    assert household_for(guest=Guest.objects.get(pk=anna.pk)).members == []
    assert household_for(guest=Guest.objects.get(pk=lisa.pk)).members == []


# --- pages ----------------------------------------------------------------------------------------


def test_group_page_connects_the_selected_guests(owner_client, tenant, event):
    a, b = GuestFactory.create_batch(2, event=event)

    response = owner_client.post(_url("guests:group_connect", tenant, event), {"guests": [str(a.pk), str(b.pk)]})

    assert response.status_code == 302
    assert response["Location"] == _url("guests:list", tenant, event)
    assert _group(a) is not None
    assert _group(a) == _group(b)
    assert "2 guests are now one group." in [m.message for m in get_messages(response.wsgi_request)]


def test_group_message_counts_everyone_in_the_resulting_group(owner_client, tenant, event, household):
    """Ana, already with Luis, grouped with Carmen: 3 guests are one group, not the 2 selected."""
    ana, luis = household
    carmen = GuestFactory(event=event, first_name="Carmen")

    response = owner_client.post(_url("guests:group_connect", tenant, event), {"guests": [str(ana.pk), str(carmen.pk)]})

    assert [m.message for m in get_messages(response.wsgi_request)] == ["3 guests are now one group."]
    assert _group(luis) == _group(carmen) == ana.group_id


def test_group_page_refuses_guests_from_another_event(owner_client, tenant, event):
    mine = GuestFactory(event=event)
    theirs = GuestFactory(event=EventFactory(tenant=tenant))

    response = owner_client.post(
        _url("guests:group_connect", tenant, event), {"guests": [str(mine.pk), str(theirs.pk)]}, follow=True
    )

    assert response.status_code == 200
    assert "Choose at least two guests of this event." in response.content.decode()
    assert _group(mine) is None and _group(theirs) is None


@pytest.mark.parametrize("ids", [[], ["not-a-uuid", "x"], "one"])
def test_group_page_refuses_bad_selections(owner_client, tenant, event, ids):
    a = GuestFactory(event=event)
    data = {"guests": [str(a.pk)] if ids == "one" else ids}

    response = owner_client.post(_url("guests:group_connect", tenant, event), data)

    assert response.status_code == 302
    assert not Guest.objects.filter(group_id__isnull=False).exists()
    assert [m.level_tag for m in get_messages(response.wsgi_request)] == ["error"]


def test_group_page_needs_post(owner_client, tenant, event):
    assert owner_client.get(_url("guests:group_connect", tenant, event)).status_code == 405


def test_viewer_cannot_connect_guests(member_client, tenant, event):
    a, b = GuestFactory.create_batch(2, event=event)
    client = member_client(Role.VIEWER)

    response = client.post(_url("guests:group_connect", tenant, event), {"guests": [str(a.pk), str(b.pk)]})

    assert response.status_code == 403
    assert _group(a) is None and _group(b) is None


def test_leave_page_takes_the_guest_out(owner_client, tenant, event, household):
    anna, lisa = household

    response = owner_client.post(_url("guests:leave_group", tenant, event, guest_id=lisa.pk))

    assert response.status_code == 302
    assert response["Location"] == _url("guests:detail", tenant, event, guest_id=lisa.pk)
    assert _group(lisa) is None
    assert _group(anna) == anna.group_id


def test_removing_a_member_from_another_guests_page_returns_there(owner_client, tenant, event, household):
    anna, lisa = household
    detail = owner_client.get(_url("guests:detail", tenant, event, guest_id=anna.pk)).content.decode()
    assert "Remove Lisa from the group" in detail

    response = owner_client.post(
        _url("guests:leave_group", tenant, event, guest_id=lisa.pk), {"return_to": str(anna.pk)}
    )

    assert response["Location"] == _url("guests:detail", tenant, event, guest_id=anna.pk)
    assert _group(lisa) is None


def test_leave_page_ignores_a_url_as_return_target(owner_client, tenant, event, household):
    _anna, lisa = household

    response = owner_client.post(
        _url("guests:leave_group", tenant, event, guest_id=lisa.pk), {"return_to": "https://evil.example/"}
    )

    assert response["Location"] == _url("guests:detail", tenant, event, guest_id=lisa.pk)


def test_leave_page_for_a_guest_of_another_event_is_404(owner_client, tenant, event, household):
    other_event = EventFactory(tenant=tenant)
    group = uuid.uuid4()
    stranger = GuestFactory(event=other_event, group_id=group)

    response = owner_client.post(_url("guests:leave_group", tenant, event, guest_id=stranger.pk))

    assert response.status_code == 404
    assert _group(stranger) == group


def test_viewer_cannot_take_a_guest_out(member_client, tenant, event, household):
    _anna, lisa = household
    client = member_client(Role.VIEWER)

    assert client.post(_url("guests:leave_group", tenant, event, guest_id=lisa.pk)).status_code == 403
    assert _group(lisa) == lisa.group_id
