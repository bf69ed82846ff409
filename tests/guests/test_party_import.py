"""Moving from the party app: its guest documents (JSON) into an invite-only event, and back again safely."""

import datetime as dt
import json
import uuid
from io import StringIO
from pathlib import Path

import pytest
from django.core import mail
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import CommandError, call_command

from eventsaas.models import AuditLog
from guests.codes import stored_code
from guests.models import Guest
from guests.party_import import (
    CREATED,
    REFUSED,
    UNCHANGED,
    UPDATED,
    PartyImportError,
    party_documents_parse,
    party_import_run,
    party_mapping_json,
    party_mapping_parse,
)
from tenants.models import Invitation, Membership, Role
from tests.factories import EventFactory, GuestFactory, MembershipFactory, TenantFactory
from tests.support.commits import after_commit

FIXTURE = Path(__file__).parent / "fixtures" / "party_guests.json"
UTC = dt.UTC


def _documents() -> list[dict]:
    return json.loads(FIXTURE.read_text())


def _run(event, documents, *, mapping=None, dry_run=False, membership=None):
    with after_commit():  # teammates' invitation emails
        return party_import_run(
            event=event,
            documents=documents,
            previous_mapping=mapping or {},
            acting_user=membership.user if membership else None,
            acting_membership=membership,
            accept_url_builder=lambda invitation: f"https://example.com/accept/{invitation.token}",
            dry_run=dry_run,
        )


def _mapping_of(report) -> dict[str, uuid.UUID]:
    return {old: uuid.UUID(new) for old, new in report.mapping.items()}


def _login(client, code, last_name):
    return client.post("/rsvp/", {"code": code, "last_name": last_name})


@pytest.fixture
def owner_membership(tenant):
    return MembershipFactory(tenant=tenant, role=Role.OWNER)


def test_the_fixture_is_imported_with_households_answers_counts_dietary_and_stamps(event, owner_membership):
    report = _run(event, _documents(), membership=owner_membership)

    assert report.counts == {CREATED: 7, UPDATED: 0, UNCHANGED: 0, REFUSED: 1}
    guests = {g.first_name: g for g in Guest.objects.for_event(event)}
    maria, pedro, siobhan, tom, linh = (guests[n] for n in ("María", "Pedro", "Siobhán", "Tom", "Linh"))
    assert maria.group_id is not None and maria.group_id == pedro.group_id
    assert tom.group_id == linh.group_id and tom.group_id != maria.group_id
    assert siobhan.group_id is None
    assert (maria.status, maria.num_guests, maria.expected_guests, maria.dietary) == ("coming", 2, 2, "vegetarian")
    assert (siobhan.status, siobhan.num_guests, siobhan.expected_guests) == ("declined", 0, 3)
    assert (tom.status, tom.num_guests, tom.answered_by_kind, tom.rsvp_at) == ("pending", 0, "", None)
    assert linh.dietary == "nut allergy (severe)"
    # ISO strings, {"$date": iso} and {"$date": {"$numberLong": ms}} alike, to the millisecond.
    assert maria.last_login_at == dt.datetime(2024, 4, 2, 18, 21, 7, 512000, tzinfo=UTC)
    assert pedro.last_access_at == dt.datetime.fromtimestamp(1712082300, tz=UTC)
    assert siobhan.last_login_at == dt.datetime(2024, 4, 5, 9, 0, tzinfo=UTC)
    # The party app kept no answer time: the answer is dated by the guest's last visit, and is their own.
    assert maria.rsvp_at == maria.last_access_at and maria.answered_by_kind == Guest.AnsweredBy.SELF
    assert maria.code == "MGL7K2" and maria.email == "maria@example.com"
    assert "mgl7k2" in maria.search_key.lower()
    refused = next(r for r in report.rows if r.outcome == REFUSED)
    assert refused.position == 8 and "maybe" in refused.reason
    assert report.ignored_fields == ["__v"]
    audit = AuditLog.objects.get(action="guest.party_imported")
    assert audit.data["created"] == 7 and audit.event_id == event.pk


def test_guests_log_in_with_their_old_token_and_last_name(client, event):
    _run(event, _documents())

    response = _login(client, "mgl7k2", "garcia lopez")
    assert response.status_code == 302 and response["Location"] == "/rsvp/answer/"
    assert "María" in client.get("/rsvp/answer/").content.decode()


def test_a_token_longer_than_a_code_keeps_working_and_so_does_its_stand_in(client, event):
    report = _run(event, _documents())

    jonas = Guest.objects.for_event(event).get(first_name="Jonas")
    assert jonas.code == stored_code("5f0c2e4b0a1b2c3d4e5f6a7b") and len(jonas.code) == 16
    row = next(r for r in report.rows if r.name == "Jonas Weiß")
    assert any(jonas.code in note for note in row.notes)
    assert _login(client, "5f0c2e4b0a1b2c3d4e5f6a7c", "Weiß").status_code == 400
    assert _login(client, "5F0C-2E4B-0A1B-2C3D-4E5F-6A7B", "weiss").status_code == 302
    client.logout()
    assert _login(client, jonas.code.lower(), "Weiß").status_code == 302


def test_a_uuid_token_with_dashes_logs_in_on_the_page_and_the_api(client, event):
    token = "3f2b8c1e-9d4a-4b7e-8f00-1a2b3c4d5e6f"  # 36 characters as typed
    _run(event, [_doc(token=token, lastName="Lee")])

    assert _login(client, token, "lee").status_code == 302
    api = client.post("/api/v1/auth/guest-login", {"code": token, "last_name": "Lee"}, content_type="application/json")
    assert api.status_code == 200, api.content


def test_a_guest_logs_in_with_the_old_token_through_the_api(client, event):
    _run(event, _documents())

    response = client.post(
        "/api/v1/auth/guest-login", {"code": "sob3h8", "last_name": "obrien"}, content_type="application/json"
    )

    assert response.status_code == 200, response.content
    assert response.json()["guest"]["first_name"] == "Siobhán"


def test_the_mapping_makes_a_rerun_update_and_never_duplicate(event):
    first = _run(event, _documents())
    assert len(first.mapping) == 7
    ids_before = set(Guest.objects.for_event(event).values_list("pk", flat=True))
    assert set(_mapping_of(first).values()) == ids_before

    documents = _documents()
    documents[3].update(rsvpStatus="coming", numGuests=1, lastAccess={"$date": "2024-05-01T12:00:00Z"})  # Tom
    documents[0].update(token="mgl7k2-new", dietary="vegan")  # María: a new token in the old app
    second = _run(event, documents, mapping=_mapping_of(first))

    assert second.counts == {CREATED: 0, UPDATED: 2, UNCHANGED: 5, REFUSED: 1}
    assert set(Guest.objects.for_event(event).values_list("pk", flat=True)) == ids_before
    assert second.mapping == first.mapping
    tom = Guest.objects.for_event(event).get(first_name="Tom")
    assert (tom.status, tom.num_guests) == ("coming", 1)
    assert tom.rsvp_at == dt.datetime(2024, 5, 1, 12, tzinfo=UTC)
    maria = Guest.objects.for_event(event).get(first_name="María")
    assert (maria.code, maria.dietary) == ("MGL7K2NEW", "vegan")
    updated = {r.name: r.changed for r in second.rows if r.outcome == UPDATED}
    assert "code" in updated["María García López"] and "dietary" in updated["María García López"]


def test_a_rerun_without_the_mapping_finds_the_guests_by_their_code(event):
    """A run cut short before its mapping was written is completed by running it again."""
    documents = _documents()
    _run(event, documents[:3])

    report = _run(event, documents)

    assert report.counts == {CREATED: 4, UPDATED: 0, UNCHANGED: 3, REFUSED: 1}
    assert Guest.objects.for_event(event).count() == 7


def test_a_rerun_keeps_answers_given_here_since_and_never_moves_stamps_back(event):
    first = _run(event, _documents())
    tom = Guest.objects.for_event(event).get(first_name="Tom")
    later = dt.datetime(2030, 1, 1, tzinfo=UTC)
    Guest.objects.filter(pk=tom.pk).update(
        status="declined", answered_by_kind="self", rsvp_at=later, last_login_at=later, last_access_at=later
    )

    report = _run(event, _documents(), mapping=_mapping_of(first))

    tom.refresh_from_db()
    assert (tom.status, tom.rsvp_at, tom.last_login_at) == ("declined", later, later)
    row = next(r for r in report.rows if r.name == "Tom Nguyen")
    assert row.outcome == UNCHANGED and row.notes


def test_a_login_recorded_while_importing_is_not_overwritten_with_an_older_time(event, monkeypatch):
    from guests import party_import

    first = _run(event, _documents())
    documents = _documents()
    documents[0]["lastLogin"] = {"$date": "2024-06-01T00:00:00Z"}
    meanwhile = dt.datetime(2030, 1, 1, tzinfo=UTC)
    match = party_import._existing_guests

    def match_then_a_login_happens(event_, plans, mapping):
        match(event_, plans, mapping)
        Guest.objects.filter(first_name="María").update(last_login_at=meanwhile)

    monkeypatch.setattr(party_import, "_existing_guests", match_then_a_login_happens)
    _run(event, documents, mapping=_mapping_of(first))

    assert Guest.objects.get(first_name="María").last_login_at == meanwhile


def test_a_dry_run_reports_the_same_and_writes_nothing(event, owner_membership):
    audit_before = AuditLog.objects.count()

    report = _run(event, _documents(), dry_run=True, membership=owner_membership)

    assert report.counts == {CREATED: 7, UPDATED: 0, UNCHANGED: 0, REFUSED: 1}
    assert not Guest.objects.for_event(event).exists()
    assert not Invitation.objects.exists() and not mail.outbox
    assert AuditLog.objects.count() == audit_before
    assert report.mapping == {}
    assert next(r for r in report.rows if r.name == "María García López").invitation == "will_invite"


def test_admins_become_teammate_invitations_once_and_only_with_an_email(event, tenant, owner_membership):
    report = _run(event, _documents(), membership=owner_membership)

    invitation = Invitation.objects.for_tenant(tenant).get()
    assert (invitation.email, invitation.role) == ("maria@example.com", Role.ADMIN)
    assert len(mail.outbox) == 1 and mail.outbox[0].to == ["maria@example.com"]
    rows = {r.name: r for r in report.rows}
    assert rows["María García López"].invitation == "invited"
    assert rows["Ana Host"].invitation == REFUSED and "email" in rows["Ana Host"].invitation_reason
    assert rows["Ana Host"].outcome == CREATED  # still a guest

    again = _run(event, _documents(), mapping=_mapping_of(report), membership=owner_membership)
    assert Invitation.objects.for_tenant(tenant).count() == 1
    assert {r.name: r for r in again.rows}["María García López"].invitation == "already_invited"


def test_only_an_owner_invites_teammates(event, tenant):
    admin = MembershipFactory(tenant=tenant, role=Role.ADMIN)

    report = _run(event, _documents(), membership=admin)

    assert not Invitation.objects.exists()
    row = next(r for r in report.rows if r.name == "María García López")
    assert row.outcome == CREATED and row.invitation == REFUSED and "owner" in row.invitation_reason


def _doc(**fields):
    base = {
        "_id": {"$oid": uuid.uuid4().hex[:24]},
        "firstName": "Ann",
        "lastName": "Lee",
        "token": uuid.uuid4().hex[:8],
        "rsvpStatus": "pending",
    }
    return {**base, **fields}


@pytest.mark.parametrize(
    ("fields", "reason"),
    [
        ({"rsvpStatus": "perhaps"}, "is not pending, coming or declined"),
        ({"lastName": ""}, "no last name"),
        ({"firstName": None}, "no first name"),
        ({"firstName": "Ann\tMarie"}, "firstName contains a tab, a line break or another control character."),
        ({"lastName": "Lee\nSmith"}, "lastName contains a tab"),
        ({"lastName": "\u202eeeL"}, "lastName contains a tab"),
        ({"lastName": "Lee\x00"}, "lastName contains a tab"),
        ({"token": None}, "no token"),
        ({"token": "ab1"}, "too easy to guess"),
        ({"_id": None}, "_id"),
        ({"_id": {"$oid": ["x"]}}, "_id"),
        ({"expectedGuests": 0}, "expectedGuests"),
        ({"expectedGuests": "many"}, "expectedGuests is not a whole number"),
        ({"numGuests": 500, "rsvpStatus": "coming"}, "between 0 and 50"),
        ({"lastLogin": "yesterday"}, "lastLogin is not a date"),
        ({"lastAccess": {"$date": "2999-01-01T00:00:00Z"}}, "in the future"),
        ({"isAdmin": "yes"}, "isAdmin"),
        ({"email": "not-an-address"}, "not an email address"),
        ({"dietary": {"a": 1}}, "dietary is not text"),
        ({"groupId": {"nested": True}}, "groupId"),
    ],
)
def test_each_bad_document_is_refused_with_its_reason_and_the_rest_imported(event, fields, reason):
    report = _run(event, [_doc(**fields), _doc(firstName="Good")])

    bad, good = report.rows
    assert bad.outcome == REFUSED and reason in bad.reason, bad.reason
    assert good.outcome == CREATED
    assert list(Guest.objects.for_event(event).values_list("first_name", flat=True)) == ["Good"]


def test_a_rerun_with_a_control_character_in_a_name_leaves_the_guest_as_it_was(event):
    document = _doc(lastName="Lee")
    first = _run(event, [document])
    guest = Guest.objects.for_event(event).get()

    again = _run(event, [{**document, "lastName": "Lee\r\nSmith"}], mapping=_mapping_of(first))

    assert again.rows[0].outcome == REFUSED
    assert "lastName contains" in again.rows[0].reason
    guest.refresh_from_db()
    assert guest.last_name == "Lee"


def test_a_document_that_is_not_an_object_is_refused(event):
    report = _run(event, ["hello", 3, None, _doc()])

    assert [r.outcome for r in report.rows] == [REFUSED, REFUSED, REFUSED, CREATED]
    assert "not a document" in report.rows[0].reason


def test_duplicate_ids_and_tokens_are_all_refused(event):
    twin_id = {"$oid": "65a1f0c2e4b0a1b2c3d4e599"}
    documents = [
        _doc(_id=twin_id, firstName="A"),
        _doc(_id="65A1F0C2E4B0A1B2C3D4E599", firstName="B"),  # the same ObjectId as a string
        _doc(token="same-1234", firstName="C"),
        _doc(token="SAME1234", firstName="D"),
        _doc(firstName="E"),
    ]

    report = _run(event, documents)

    outcomes = [(r.outcome, r.reason) for r in report.rows]
    assert all(o == REFUSED and "more than once" in reason for o, reason in outcomes[:2])
    assert all(o == REFUSED and "another document" in reason for o, reason in outcomes[2:4])
    assert outcomes[4][0] == CREATED
    assert Guest.objects.for_event(event).count() == 1


def test_a_code_held_by_another_guest_is_refused_with_the_reason(event, tenant):
    GuestFactory(event=event, first_name="Here", code="TAKEN123")
    GuestFactory(event=EventFactory(tenant=TenantFactory()), code="ELSEWHERE1")

    report = _run(event, [_doc(token="taken123", lastName="Other"), _doc(token="elsewhere1")])

    here, elsewhere = report.rows
    assert here.outcome == REFUSED and "Here" in here.reason and "this event" in here.reason
    assert elsewhere.outcome == REFUSED and "another event" in elsewhere.reason
    assert "Rival" not in elsewhere.reason
    assert Guest.objects.count() == 2


def test_without_the_mapping_a_code_matches_only_the_guest_with_the_same_last_name(event):
    """The code and last name are what the guest logs in with: both must agree to take the guest as the same."""
    GuestFactory(event=event, first_name="Ann", last_name="Lee", code="LEE12345")

    report = _run(event, [_doc(token="lee12345", lastName="Lee", firstName="Annie")])

    assert report.rows[0].outcome == UPDATED and report.rows[0].changed == ["first_name"]
    assert Guest.objects.for_event(event).get().first_name == "Annie"


def test_coming_without_a_count_counts_the_expected_guests_and_says_so(event):
    report = _run(event, [_doc(rsvpStatus="coming", expectedGuests=3), _doc(rsvpStatus="declined", numGuests=2)])

    coming, declined = Guest.objects.for_event(event).order_by("created_at")
    assert (coming.status, coming.num_guests) == ("coming", 3)
    assert (declined.status, declined.num_guests) == ("declined", 0)
    assert all(r.notes for r in report.rows)


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        (b"", "empty"),
        (b"{not json", "not valid JSON"),
        (b'"a string"', "JSON array"),
        (b'{"guests": []}\n{"a": 1', "not valid JSON (line 2"),
        (b"[]", "no guest documents"),
        (b"\xff\xfe[", "UTF-8"),
        (b"[" * 100_000 + b"]" * 100_000, "nested too deeply"),
        (b"[" + b" " * (6 * 1024 * 1024) + b"]", "larger than 5 MB"),
    ],
)
def test_a_file_that_is_not_an_export_is_refused_whole(raw, message):
    with pytest.raises(PartyImportError) as error:
        party_documents_parse(raw)
    assert message in " ".join(error.value.messages)


def test_one_document_per_line_as_mongoexport_writes_by_default():
    lines = "\n".join(json.dumps(d) for d in _documents()).encode()

    assert len(party_documents_parse(lines)) == 8


def test_a_mapping_of_another_event_or_with_bad_ids_is_refused(event):
    other = EventFactory(tenant=event.tenant)
    written = party_mapping_json(event=other, mapping={"a": str(uuid.uuid4())}).encode()

    with pytest.raises(PartyImportError, match="another event"):
        party_mapping_parse(written, event=event)
    with pytest.raises(PartyImportError, match="not a guest id"):
        party_mapping_parse(b'{"a": "nope"}', event=event)
    assert party_mapping_parse(b'{"a": "%s"}' % str(other.pk).encode(), event=event) == {"a": other.pk}


def test_a_mapping_pointing_at_another_events_guest_never_touches_it(event):
    stranger = GuestFactory(event=EventFactory(tenant=TenantFactory()), first_name="Stranger")
    document = _doc(firstName="Mine")

    report = _run(event, [document], mapping={document["_id"]["$oid"]: stranger.pk})

    stranger.refresh_from_db()
    assert stranger.first_name == "Stranger"
    assert report.rows[0].outcome == CREATED and report.rows[0].notes


def test_a_ticketed_or_archived_event_is_refused(tenant):
    ticketed = EventFactory(tenant=tenant, kind="ticketed")
    archived = EventFactory(tenant=tenant, status="archived")

    for event in (ticketed, archived):
        with pytest.raises(PartyImportError):
            _run(event, [_doc()])
    assert not Guest.objects.exists()


# --- the command ------------------------------------------------------------------------------------


def _command(*args):
    out = StringIO()
    call_command("import_party_json", *[str(a) for a in args], stdout=out)
    return out.getvalue()


def test_the_command_imports_writes_the_mapping_and_reruns_without_duplicates(event, owner_membership, tmp_path):
    mapping = tmp_path / "map.json"

    output = _command(event.pk, FIXTURE, "--mapping", mapping)

    assert "7 created, 0 updated, 0 unchanged, 1 refused." in output
    assert "#8 65a1f0c2e4b0a1b2c3d4e508 Zed Unknown: refused: " in output
    assert "teammate invitation sent" in output and "Fields not imported: __v" in output
    written = json.loads(mapping.read_text())
    assert written["event_id"] == str(event.pk) and len(written["guests"]) == 7
    assert set(written["guests"].values()) == {
        str(pk) for pk in Guest.objects.for_event(event).values_list("pk", flat=True)
    }
    assert Invitation.objects.get().invited_by == owner_membership.user

    again = _command(event.pk, FIXTURE, "--mapping", mapping)

    assert "0 created, 0 updated, 7 unchanged, 1 refused." in again
    assert Guest.objects.for_event(event).count() == 7
    assert json.loads(mapping.read_text()) == written


def test_the_command_dry_run_writes_nothing(event, tmp_path):
    mapping = tmp_path / "map.json"

    output = _command(event.pk, FIXTURE, "--mapping", mapping, "--dry-run")

    assert output.startswith("Dry run: nothing was written.")
    assert "7 created" in output
    assert not mapping.exists() and not Guest.objects.exists()


def test_the_command_refuses_a_bad_file_an_unknown_event_and_a_stranger_as_inviter(event, tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text("[{]")
    mapping = tmp_path / "map.json"

    with pytest.raises(CommandError, match="not valid JSON"):
        _command(event.pk, bad, "--mapping", mapping)
    with pytest.raises(CommandError, match="No event"):
        _command(uuid.uuid4(), FIXTURE, "--mapping", mapping)
    with pytest.raises(CommandError, match="not an owner"):
        _command(event.pk, FIXTURE, "--mapping", mapping, "--invited-by", "nobody@example.com")
    assert not mapping.exists() and not Guest.objects.exists()
    assert not Membership.objects.filter(user__email="nobody@example.com").exists()


# --- the page -----------------------------------------------------------------------------------------


def _page(event, suffix=""):
    return f"/o/{event.tenant.slug}/events/{event.pk}/guests/import/party/{suffix}"


def _upload(name="guests.json", content=None):
    return SimpleUploadedFile(name, FIXTURE.read_bytes() if content is None else content, "application/json")


def _preview(client, event, **files):
    return client.post(_page(event), {"file": _upload(), **files})


def test_the_page_previews_then_imports_and_offers_the_mapping(member_client, event):
    client = member_client(Role.OWNER)
    assert client.get(_page(event)).status_code == 200

    preview = _preview(client, event)

    assert preview.status_code == 200
    body = preview.content.decode()
    assert "Preview: nothing is saved yet" in body and "7 created, 0 updated, 0 unchanged, 1 refused." in body
    assert "is not pending, coming or declined" in body and "will be invited as a teammate" in body
    assert not Guest.objects.exists() and not Invitation.objects.exists()

    done = client.post(_page(event, "confirm/"), {"token": preview.context["preview_token"]})

    assert done.status_code == 302 and done["Location"] == _page(event)
    assert Guest.objects.for_event(event).count() == 7 and Invitation.objects.count() == 1
    result = client.get(_page(event)).content.decode()
    assert "Last import" in result and "teammate invitation sent" in result
    download = client.get(_page(event, "mapping/"))
    assert download["Content-Disposition"].startswith("attachment;")
    mapping = json.loads(download.content)
    assert len(mapping["guests"]) == 7

    # The same export again, with the downloaded mapping: nothing added.
    again = _preview(client, event, mapping=_upload("map.json", download.content))
    assert "0 created, 0 updated, 7 unchanged, 1 refused." in again.content.decode()
    client.post(_page(event, "confirm/"), {"token": again.context["preview_token"]})
    assert Guest.objects.for_event(event).count() == 7


def test_a_confirmation_is_used_once_and_needs_its_own_preview(member_client, event):
    client = member_client(Role.ADMIN)
    token = _preview(client, event).context["preview_token"]

    assert client.post(_page(event, "confirm/"), {"token": "forged"}).status_code == 302
    assert not Guest.objects.exists()
    client.post(_page(event, "confirm/"), {"token": token})
    client.post(_page(event, "confirm/"), {"token": token})

    assert Guest.objects.for_event(event).count() == 7
    assert AuditLog.objects.filter(action="guest.party_imported").count() == 1


@pytest.mark.parametrize(
    ("files", "field", "message"),
    [
        ({"file": _upload(content=b"{oops")}, "file", "not valid JSON"),
        ({"file": _upload(content=b'{"a": 1}\n[')}, "file", "not valid JSON"),
        ({"file": _upload(content=b" " * (5 * 1024 * 1024 + 1))}, "file", "larger than 5 MB"),
        ({"file": _upload(), "mapping": _upload("map.json", b'{"x": "not-an-id"}')}, "mapping", "not a guest id"),
        ({}, "file", "required"),
    ],
)
def test_a_bad_upload_is_a_field_error_and_writes_nothing(member_client, event, files, field, message):
    client = member_client(Role.OWNER)

    response = client.post(_page(event), files)

    assert response.status_code == 400
    assert message in " ".join(response.context["form"].errors[field])
    assert not Guest.objects.exists()


def test_another_tenants_event_is_404_for_every_step(member_client, event):
    client = member_client(Role.OWNER, tenant_=TenantFactory())
    url = f"/o/{event.tenant.slug}/events/{event.pk}/guests/import/party/"
    assert client.get(url).status_code == 404
    assert client.post(url, {"file": _upload()}).status_code == 404
    assert client.post(url + "confirm/", {"token": "x"}).status_code == 404
    assert client.get(url + "mapping/").status_code == 404
    assert not Guest.objects.exists()


def test_an_event_of_my_tenant_is_404_under_another_tenant_slug(member_client, event):
    """My own organization's slug with another tenant's event id: the event is not found there."""
    other = TenantFactory()
    client = member_client(Role.OWNER, tenant_=other)

    response = client.post(f"/o/{other.slug}/events/{event.pk}/guests/import/party/", {"file": _upload()})

    assert response.status_code == 404
    assert not Guest.objects.exists()


@pytest.mark.parametrize("role", [Role.VIEWER, Role.DOOR])
def test_viewers_and_door_staff_cannot_import(member_client, event, role):
    owner = member_client(Role.OWNER)
    token = _preview(owner, event).context["preview_token"]
    client = member_client(role)  # the same client, now logged in with the weaker role

    assert client.post(_page(event), {"file": _upload()}).status_code == 403
    assert client.post(_page(event, "confirm/"), {"token": token}).status_code == 403
    assert not Guest.objects.exists()


def test_an_admin_imports_guests_but_cannot_invite_teammates(member_client, event):
    client = member_client(Role.ADMIN)
    token = _preview(client, event).context["preview_token"]

    client.post(_page(event, "confirm/"), {"token": token})

    assert Guest.objects.for_event(event).count() == 7
    assert not Invitation.objects.exists()
    assert "Only an owner can invite teammates." in client.get(_page(event)).content.decode()


@pytest.mark.django_db
def test_the_two_import_pages_link_to_each_other(member_client, event):
    client = member_client(Role.OWNER)
    file_page = client.get(f"/o/{event.tenant.slug}/events/{event.pk}/guests/import/")
    party_page = client.get(f"/o/{event.tenant.slug}/events/{event.pk}/guests/import/party/")
    assert file_page.status_code == party_page.status_code == 200
    assert f"/events/{event.pk}/guests/import/party/" in file_page.content.decode()
    assert f'href="/o/{event.tenant.slug}/events/{event.pk}/guests/import/"' in party_page.content.decode()
