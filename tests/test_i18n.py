"""English and Spanish: the Spanish catalog, the browser's language, the switcher, the event's language for guests.

The catalog is locale/es/LC_MESSAGES/django.po (refresh with bin/i18n); its compiled django.mo is
committed, because a fresh machine may not have GNU gettext to compile it.
"""

import datetime as dt
import gettext
import re
import shutil
import subprocess
import sys
import uuid
from html.parser import HTMLParser
from pathlib import Path

import polib
import pytest
from django.conf import settings
from django.utils import timezone, translation

from events.models import Event
from rsvp.models import ChangeRequest
from rsvp.services import HouseholdAnswer, rsvp_record
from scripts import po_check
from tenants.models import Invitation, Role
from tests.factories import EventFactory, GuestFactory
from tests.rsvp.household_form import household_post, row

LOCALE_DIR = Path(settings.BASE_DIR) / "locale" / "es" / "LC_MESSAGES"
PO_PATH = LOCALE_DIR / "django.po"
MO_PATH = LOCALE_DIR / "django.mo"
ES = {"HTTP_ACCEPT_LANGUAGE": "es"}
EN = {"HTTP_ACCEPT_LANGUAGE": "en"}
ANSWER_URL = "/rsvp/answer/"
PLACEHOLDER = po_check.PLACEHOLDER


@pytest.fixture(autouse=True)
def _keep_active_language():
    # Requests activate a language on this thread; do not let Spanish leak into other tests.
    before = translation.get_language()
    yield
    if before:
        translation.activate(before)
    else:
        translation.deactivate()


# --- the catalog --------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def catalog() -> polib.POFile:
    return polib.pofile(str(PO_PATH))


def _problems_report(problems) -> str:
    return "fix these in locale/es/LC_MESSAGES/django.po, then run bin/i18n:\n" + "\n".join(map(str, problems))


def _label(entry) -> str:
    return repr(entry.msgid) + (f" (context {entry.msgctxt!r})" if entry.msgctxt else "")


def _key(entry) -> tuple:
    return entry.msgctxt, entry.msgid, entry.msgid_plural or None


def test_po_header_is_spanish_utf8_and_not_fuzzy(catalog):
    assert catalog.metadata["Language"] == "es"
    assert "charset=UTF-8" in catalog.metadata["Content-Type"]
    assert not catalog.metadata_is_fuzzy, "a fuzzy header is skipped by msgfmt (and with it the charset)"
    assert po_check.nplurals(catalog) >= 2
    assert len(po_check.live_entries(catalog)) > 200


@pytest.mark.parametrize("kind", ["fuzzy", "untranslated", "obsolete"])
def test_every_entry_is_translated_none_is_fuzzy_and_none_is_obsolete(kind):
    problems = [problem for problem in po_check.catalogue_problems(PO_PATH) if problem.kind == kind]
    assert not problems, _problems_report(problems)


def test_translations_keep_the_placeholders():
    problems = [problem for problem in po_check.catalogue_problems(PO_PATH) if problem.kind == "placeholders"]
    assert not problems, _problems_report(problems)


BROKEN_PO = r"""msgid ""
msgstr ""
"Language: es\n"
"Content-Type: text/plain; charset=UTF-8\n"
"Plural-Forms: nplurals=3; plural=n == 1 ? 0 : n != 0 && n % 1000000 == 0 ? 1 : 2;\n"

msgid "Fine"
msgstr "Bien"

#, python-format
msgid "Hello %(name)s"
msgstr "Hola %(name)s"

#, fuzzy
msgid "Guessed"
msgstr "Adivinado"

msgid "Left empty"
msgstr ""

msgid "Only spaces"
msgstr "  "

#, python-format
msgid "%(count)s seat"
msgid_plural "%(count)s seats"
msgstr[0] "%(count)s plaza"
msgstr[1] "%(count)s plazas"

#, python-format
msgid "Up to %(max)s"
msgstr "Hasta %(maximo)s"

#, python-format
msgid "%(count)s ticket"
msgid_plural "%(count)s tickets"
msgstr[0] "%(count)s entrada"
msgstr[1] "entradas"
msgstr[2] "%(count)s entradas"

#~ msgid "Gone from the code"
#~ msgstr "Ya no está en el código"
"""


def test_the_catalogue_checks_catch_each_kind_of_broken_entry(tmp_path):
    """The checks above are worth something only if a broken catalogue fails them."""
    path = tmp_path / "django.po"
    path.write_text(BROKEN_PO, encoding="utf-8")

    found = {(problem.kind, problem.msgid) for problem in po_check.catalogue_problems(path)}

    assert found == {
        ("fuzzy", "Guessed"),
        ("untranslated", "Left empty"),
        ("untranslated", "Only spaces"),
        ("untranslated", "%(count)s seat"),  # two plural forms where Spanish has three
        ("placeholders", "Up to %(max)s"),
        ("placeholders", "%(count)s ticket"),  # one plural form lost the count
        ("obsolete", "Gone from the code"),
    }
    assert po_check.main([str(path)]) == 1
    path.write_text(BROKEN_PO.split("#, fuzzy")[0], encoding="utf-8")
    assert po_check.catalogue_problems(path) == []
    assert po_check.main([str(path)]) == 0


def test_a_fuzzy_header_is_caught(tmp_path):
    path = tmp_path / "django.po"
    path.write_text("#, fuzzy\n" + BROKEN_PO.split("#, fuzzy")[0], encoding="utf-8")
    assert [problem.kind for problem in po_check.catalogue_problems(path)] == ["fuzzy"]


def test_compiled_mo_matches_the_po(catalog):
    """django.mo is committed and must be recompiled (bin/i18n) whenever django.po changes."""
    with MO_PATH.open("rb") as fp:
        compiled = gettext.GNUTranslations(fp)._catalog
    stale = []
    for entry in po_check.live_entries(catalog):
        key = f"{entry.msgctxt}\x04{entry.msgid}" if entry.msgctxt else entry.msgid
        forms = po_check.translations(entry)
        if not entry.msgid_plural:
            if compiled.get(key) != forms[0]:
                stale.append(_label(entry))
        elif [compiled.get((key, i)) for i in range(len(forms))] != forms:
            stale.append(_label(entry))
    assert not stale, "django.mo is out of date; run bin/i18n:\n" + "\n".join(stale)


@pytest.mark.skipif(not shutil.which("xgettext") or not shutil.which("msgmerge"), reason="needs GNU gettext")
def test_catalog_has_every_marked_string_of_the_source(catalog, tmp_path):
    """Strings marked for translation since the last bin/i18n run would silently stay English."""
    base = Path(settings.BASE_DIR)
    skipped = {".venv", "bench", "tests", "locale", "staticfiles", "var", "node_modules"}
    for item in base.iterdir():
        if item.name.startswith(".") or item.name in skipped or item.name.startswith("db.sqlite3"):
            continue
        if item.is_dir():
            shutil.copytree(item, tmp_path / item.name, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
        else:
            shutil.copy2(item, tmp_path / item.name)
    (tmp_path / "locale").mkdir()
    subprocess.run(
        [sys.executable, "manage.py", "makemessages", "-l", "es", "--ignore=.venv", "--ignore=bench", "--ignore=tests"],
        cwd=tmp_path,
        check=True,
        capture_output=True,
    )
    fresh = polib.pofile(str(tmp_path / "locale" / "es" / "LC_MESSAGES" / "django.po"))
    known = {_key(entry) for entry in po_check.live_entries(catalog)}
    missing = [_label(entry) for entry in po_check.live_entries(fresh) if _key(entry) not in known]
    assert not missing, "new strings are not in the catalog; run bin/i18n and translate them:\n" + "\n".join(missing)


# --- finding English left on a Spanish page --------------------------------------------------------


class _VisibleText(HTMLParser):
    """Text nodes and the attributes people read (aria-label, title, placeholder, alt)."""

    READ_ATTRIBUTES = {"aria-label", "title", "placeholder", "alt"}

    def __init__(self):
        super().__init__()
        self.texts, self._skip = [], 0

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        # Language names in the switcher are shown in their own language on purpose ("English").
        if tag in {"script", "style"} or (tag == "select" and attrs.get("id") == "language-switch"):
            self._skip += 1
        self.texts += [value for name, value in attrs.items() if name in self.READ_ATTRIBUTES and value]

    def handle_endtag(self, tag):
        if tag in {"script", "style", "select"} and self._skip:
            self._skip -= 1

    def handle_data(self, data):
        if not self._skip and data.strip():
            self.texts.append(data)


@pytest.fixture(scope="module")
def english_patterns(catalog):
    """A full-match pattern for each English source text whose Spanish differs; placeholders match anything."""
    patterns = {}
    for entry in po_check.live_entries(catalog):
        forms = po_check.translations(entry)
        for index, source in enumerate([entry.msgid, entry.msgid_plural]):
            if not source or source in forms[min(index, len(forms) - 1) :]:
                continue
            text = " ".join(source.split())
            parts = PLACEHOLDER.split(text)
            patterns[text] = re.compile(".+?".join(re.escape(part) for part in parts))
    return patterns


def english_leftovers(response, patterns) -> list[str]:
    parser = _VisibleText()
    parser.feed(response.content.decode())
    found = set()
    for raw in parser.texts:
        text = " ".join(raw.split())
        pieces = {text} | {piece.strip() for piece in re.split(r"[·:()]", text)}
        for piece in pieces - {""}:
            found.update(source for source, pattern in patterns.items() if pattern.fullmatch(piece))
    return sorted(found)


def _page(client, url, **headers):
    response = client.get(url, **headers)
    assert response.status_code == 200, f"{url}: {response.status_code}"
    return response, response.content.decode()


# --- the browser's language (LocaleMiddleware) -----------------------------------------------------


def test_landing_page_follows_the_browser_language(client, db):
    _response, english = _page(client, "/", **EN)
    assert '<html lang="en">' in english
    assert "Invite households with personal codes" in english

    _response, spanish = _page(client, "/", **ES)
    assert '<html lang="es">' in spanish
    for text in ["Tu evento, la respuesta de todos.", "¿Te han invitado?", "Responde a tu invitación", "Regístrate"]:
        assert text in spanish
    assert "Your event" not in spanish


def test_guest_login_page_in_spanish(client, db):
    _response, page = _page(client, "/rsvp/", **ES)
    assert '<html lang="es">' in page
    for text in ["Responde a tu invitación", "Código personal", "Apellidos", "Continuar", "Tengo una invitación"]:
        assert text in page


def test_guest_login_help_text_is_translated_per_request(client, db):
    """The code's help text names its length; it must not freeze in the language active at import."""
    assert "8 letters and digits, printed on your invitation." in _page(client, "/rsvp/", **EN)[1]
    assert "8 letras y números, impresos en tu invitación." in _page(client, "/rsvp/", **ES)[1]
    assert "8 letters and digits, printed on your invitation." in _page(client, "/rsvp/", **EN)[1]


def test_guest_login_error_in_spanish(client, event):
    GuestFactory(event=event, last_name="Müller")
    response = client.post("/rsvp/", {"code": "WRONGCODE", "last_name": "Müller"}, **ES)
    assert response.status_code == 400
    assert "No encontramos ninguna invitación con este código" in response.content.decode()


def test_organizer_login_and_signup_pages_in_spanish(client, db):
    _response, login = _page(client, "/login/", **ES)
    for text in ["Acceso para organizadores", "Correo electrónico", "¿Olvidaste tu contraseña?", "Crear una cuenta"]:
        assert text in login
    _response, signup = _page(client, "/signup/", **ES)
    for text in ["Crea tu organización", "Nombre de la organización", "Contraseña", "¿Ya tienes cuenta?"]:
        assert text in signup


@pytest.mark.parametrize(
    "url",
    [
        "/",
        "/rsvp/",
        "/login/",
        "/signup/",
        "/password-reset/",
        "/password-reset/sent/",
        "/reset/MQ/bad/",
        "/reset/done/",
    ],
)
def test_public_pages_have_no_english_left_in_spanish(client, db, english_patterns, url):
    response, _page_text = _page(client, url, **ES)
    assert english_leftovers(response, english_patterns) == []


def test_the_english_detector_finds_english(client, db, english_patterns):
    """The check above is only worth something if it sees English on an English page."""
    response, _page_text = _page(client, "/rsvp/", **EN)
    leftovers = english_leftovers(response, english_patterns)
    assert {"Answer your invitation", "Personal code", "Continue", "Language"} <= set(leftovers)


# --- the language switcher -----------------------------------------------------------------------


def _switch(client, language, next_url, **headers):
    response = client.post("/i18n/setlang/", {"language": language, "next": next_url}, **headers)
    assert response.status_code == 302
    assert response.url == next_url
    assert client.cookies[settings.LANGUAGE_COOKIE_NAME].value == language
    return response


def test_language_switcher_switches_organizer_pages(owner_client, tenant):
    url = f"/o/{tenant.slug}/"
    _response, page = _page(owner_client, url)
    assert '<html lang="en">' in page and "New event" in page

    _switch(owner_client, "es", url)
    _response, page = _page(owner_client, url)
    assert '<html lang="es">' in page
    for text in ["Eventos", "Nuevo evento", "Mostrar archivados", "Cerrar sesión", "Equipo"]:
        assert text in page
    assert '<option value="es" selected>' in page

    # The explicit choice wins over the browser's language, both ways.
    _switch(owner_client, "en", url)
    _response, page = _page(owner_client, url, **ES)
    assert '<html lang="en">' in page and "New event" in page


def test_switcher_only_accepts_offered_languages(client, db):
    client.post("/i18n/setlang/", {"language": "xx", "next": "/"})
    assert '<html lang="en">' in _page(client, "/")[1]


@pytest.fixture
def organizer_pages(tenant, owner, event):
    """One URL per organizer page, with data behind every section of each page."""
    group_id = uuid.uuid4()
    anna = GuestFactory(event=event, first_name="Anna", last_name="Müller", group_id=group_id, expected_guests=2)
    GuestFactory(event=event, first_name="Lisa", last_name="Müller", group_id=group_id)
    Event.objects.filter(pk=event.pk).update(
        questions=[
            {"key": "menu", "label": "Menú", "choices": ["Pescado", "Vegetariano"]},
            {"key": "song", "label": "Canción"},
        ]
    )
    event.refresh_from_db()
    anna.event = event
    rsvp_record(
        guest=anna,
        answer=HouseholdAnswer(attending=True, num_guests=3, dietary="Vegetarian", answers={"menu": "Pescado"}),
        acting_user=owner,
    )
    change = ChangeRequest.objects.create(
        tenant_id=tenant.pk, event_id=event.pk, guest=anna, proposed={"attending": False}, message="Lo siento"
    )
    Invitation.objects.create(
        tenant=tenant,
        email="new@example.com",
        role=Role.ADMIN,
        token=uuid.uuid4().hex,
        invited_by=owner,
        expires_at=timezone.now() + dt.timedelta(days=7),
    )
    org, ev = f"/o/{tenant.slug}", f"/o/{tenant.slug}/events/{event.pk}"
    return [
        "/app/organizations/",
        f"{org}/",
        f"{org}/?archived=1",
        f"{org}/team/",
        f"{org}/events/new/",
        f"{ev}/",
        f"{ev}/edit/",
        f"{ev}/guests/",
        f"{ev}/guests/new/",
        f"{ev}/guests/{anna.pk}/",
        f"{ev}/guests/{anna.pk}/delete/",
        f"{ev}/guests/{anna.pk}/answer/",
        f"{ev}/dietary/",
        f"{ev}/questions/",
        f"{ev}/change-requests/",
        f"{ev}/change-requests/{change.pk}/",
        f"{ev}/activity/",
        f"{ev}/activity/?never=1",
    ]


def test_organizer_pages_have_no_english_left_in_spanish(owner_client, organizer_pages, english_patterns):
    _switch(owner_client, "es", "/app/")
    leftovers = {}
    for url in organizer_pages:
        response, page = _page(owner_client, url)
        assert '<html lang="es">' in page, url
        if found := english_leftovers(response, english_patterns):
            leftovers[url] = found
    assert leftovers == {}


# --- the event's language for its guests ---------------------------------------------------------


@pytest.fixture
def spanish_household(tenant):
    event = EventFactory(tenant=tenant, language="es", dress_code="Formal")
    group_id = uuid.uuid4()
    anna = GuestFactory(event=event, first_name="Anna", last_name="Müller", group_id=group_id)
    GuestFactory(event=event, first_name="Lisa", last_name="Müller", group_id=group_id)
    return anna


def _guest_login(client, guest, **headers):
    response = client.post("/rsvp/", {"code": guest.code, "last_name": guest.last_name}, **headers)
    assert response.status_code == 302 and response.url == ANSWER_URL
    return client


def test_guest_sees_the_event_language_with_an_english_browser(client, spanish_household, english_patterns):
    _guest_login(client, spanish_household, **EN)
    response, page = _page(client, ANSWER_URL, **EN)
    assert '<html lang="es">' in page
    for text in [
        "¡Hola, Anna!",
        "Tu invitación",
        "Esta invitación es para 2 personas:",
        "¿Vendrás?",
        "¿Viene?",
        " Viene</label>",
        " No viene</label>",
        "Lisa responderá más tarde",
        "Personas",
        "Código de vestimenta",
        "Enviar mi respuesta",
    ]:
        assert text in page
    assert '<option value="es" selected>' in page
    assert english_leftovers(response, english_patterns) == []


@pytest.mark.parametrize(
    ("change", "texts"),
    [
        (
            {"rsvp_deadline": dt.datetime(2000, 1, 1, tzinfo=dt.UTC)},
            ["Ya no se admiten respuestas", "Pide al organizador que cambie tu respuesta", "Enviar mi solicitud"],
        ),
        ({"status": "draft", "rsvp_deadline": None}, ["Todavía no se admiten respuestas"]),
    ],
    ids=["deadline-passed", "draft"],
)
def test_closed_and_not_yet_open_pages_speak_the_event_language(
    client, spanish_household, english_patterns, change, texts
):
    _guest_login(client, spanish_household, **EN)
    Event.objects.filter(pk=spanish_household.event_id).update(**change)

    response, page = _page(client, ANSWER_URL, **EN)

    for text in texts:
        assert text in page
    assert english_leftovers(response, english_patterns) == []


def test_guest_answer_messages_follow_the_event_language(client, spanish_household, english_patterns):
    _guest_login(client, spanish_household, **EN)
    response = client.post(ANSWER_URL, household_post(row("yes", ""), row("later")), **EN)
    assert response.status_code == 400
    assert "Dinos cuántas personas vienen (al menos 1)." in response.content.decode()

    response = client.post(ANSWER_URL, household_post(row("yes", 1), row("no")), **EN)
    assert response.status_code == 409
    page = response.content.decode()
    for text in [
        "Esperábamos 2, pero has indicado 1.",
        "¿Lisa no viene?",
        "Confirmar: viene 1 persona",
        "O cambia las respuestas de abajo.",
    ]:
        assert text in page
    assert english_leftovers(response, english_patterns) == []

    response = client.post(ANSWER_URL, household_post(row("yes", 1), row("yes", 1)), follow=True, **EN)
    page = response.content.decode()
    assert "¡Gracias! Hemos guardado tu respuesta." in page
    assert "Anna Müller · Asiste (1 persona)" in page and "Lisa Müller · Asiste (1 persona)" in page
    assert "respondió Anna" in page
    assert english_leftovers(response, english_patterns) == []


def test_invitation_page_in_spanish(client, tenant, owner, english_patterns):
    invitation = Invitation.objects.create(
        tenant=tenant,
        email="new@example.com",
        role=Role.VIEWER,
        token=uuid.uuid4().hex,
        invited_by=owner,
        expires_at=timezone.now() + dt.timedelta(days=7),
    )
    response, page = _page(client, f"/app/invitations/{invitation.token}/", **ES)
    assert f"Únete a {tenant.name}" in page and "Crear cuenta y unirme" in page
    assert english_leftovers(response, english_patterns) == []


def test_guest_who_chose_english_sees_english(client, spanish_household):
    _guest_login(client, spanish_household, **EN)
    _switch(client, "en", ANSWER_URL)
    _response, page = _page(client, ANSWER_URL, **ES)
    assert '<html lang="en">' in page
    assert "Hello Anna!" in page and "Will you be there?" in page
    assert "¿Vendrás?" not in page


def test_guest_of_an_english_event_sees_english_with_a_spanish_browser(client, event):
    guest = GuestFactory(event=event, first_name="Ben", last_name="Smith")
    assert event.language == "en"
    _guest_login(client, guest, **ES)
    _response, page = _page(client, ANSWER_URL, **ES)
    assert '<html lang="en">' in page and "Hello Ben!" in page


def test_guest_who_chose_spanish_sees_spanish_on_an_english_event(client, event):
    guest = GuestFactory(event=event, first_name="Ben", last_name="Smith")
    _guest_login(client, guest)
    _switch(client, "es", ANSWER_URL)
    _response, page = _page(client, ANSWER_URL, **EN)
    assert '<html lang="es">' in page and "¡Hola, Ben!" in page


def test_closed_rsvp_page_in_spanish(client, spanish_household):
    spanish_household.event.__class__.objects.filter(pk=spanish_household.event_id).update(
        rsvp_deadline=timezone.now() - dt.timedelta(days=1)
    )
    _guest_login(client, spanish_household)
    _response, page = _page(client, ANSWER_URL)
    assert "Ya no se admiten respuestas" in page
    assert "ponte en contacto con la organización" in page
