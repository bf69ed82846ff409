import zoneinfo
from typing import cast

from django import forms
from django.core.exceptions import ValidationError
from django.utils.translation import gettext_lazy as _

from events.models import Event, TicketType, known_timezones
from events.services import questions_from_text, questions_to_text
from eventsaas.dates import canonical_time_zones, event_local, validate_sane_datetime
from eventsaas.forms import AmountField
from eventsaas.money import CURRENCY_CHOICES, amount_to_minor_units, minor_units_to_text

LOCAL_DATETIME_FIELDS = ("starts_at", "ends_at", "rsvp_deadline")


class LocalDateTimeInput(forms.DateTimeInput):
    input_type = "datetime-local"

    def __init__(self, **kwargs):
        super().__init__(format="%Y-%m-%dT%H:%M", **kwargs)


def _check_range(form, name: str, cleaned: dict) -> None:
    """A field error for a date outside 1900-2200 (in the event's zone or in UTC), before anything converts it."""
    try:
        validate_sane_datetime(cleaned[name])
    except ValidationError as error:
        form.add_error(name, error)  # also drops it from cleaned_data


def _timezone_choices(current: str | None = None) -> list:
    """UTC first, then the canonical zones grouped by region (Europe, America…); an event's
    older, non-canonical zone stays selectable so the event keeps validating."""
    zones = canonical_time_zones()
    groups: dict[str, list[tuple[str, str]]] = {}
    for name in zones[1:]:
        region = name.split("/", 1)[0]
        groups.setdefault(region, []).append((name, name.split("/", 1)[1].replace("_", " ")))
    choices: list = [("UTC", "UTC")]
    if current and current not in zones and current in known_timezones():
        choices.append((current, current))
    choices.extend((region, members) for region, members in groups.items())
    return choices


class TimeZoneSelect(forms.Select):
    """The zone picker; static/js/timezone.js sets a new event's zone from the browser's."""

    def __init__(self, attrs=None):
        super().__init__(attrs={"data-browser-timezone": "", **(attrs or {})})


class EventForm(forms.ModelForm):
    """Dates are typed in the event's own time zone and stored in UTC.

    The kind (invite-only or ticketed) is asked only when the event is created:
    it decides which pages the event has and never changes afterwards.
    """

    timezone = forms.ChoiceField(label=_("Time zone"), choices=_timezone_choices, initial="UTC", widget=TimeZoneSelect)
    questions_text = forms.CharField(
        label=_("Custom questions"),
        required=False,
        widget=forms.Textarea(attrs={"rows": 4}),
        help_text=_(
            "One question per line. For a choice, add “::” and the options separated by “|”, "
            "e.g. “Which meal? :: Fish | Meat | Vegetarian”."
        ),
    )

    class Meta:
        model = Event
        fields = [
            "name",
            "description",
            "status",
            "starts_at",
            "ends_at",
            "timezone",
            "location",
            "dress_code",
            "rsvp_deadline",
            "language",
            "contact_email",
            "attendee_names_required",
        ]
        widgets = {
            "starts_at": LocalDateTimeInput(),
            "ends_at": LocalDateTimeInput(),
            "rsvp_deadline": LocalDateTimeInput(),
            "description": forms.Textarea(attrs={"rows": 3}),
        }

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        for name in LOCAL_DATETIME_FIELDS:
            date_field = cast(forms.DateTimeField, self.fields[name])
            date_field.input_formats = ["%Y-%m-%dT%H:%M", "%Y-%m-%d %H:%M", "%Y-%m-%dT%H:%M:%S"]
        # A new Event already has its UUID, so "not saved yet" is _state.adding, not a missing pk.
        if self.instance._state.adding:
            self.fields["kind"] = forms.ChoiceField(
                label=_("Kind of event"),
                choices=Event.Kind.choices,
                initial=Event.Kind.INVITE_ONLY,
                # Absent means invite-only, the kind every event had before tickets existed.
                required=False,
                widget=forms.RadioSelect,
                help_text=_(
                    "Invite-only: you add the guests, they answer with their code. "
                    "Ticketed: the public buys tickets. This cannot be changed later."
                ),
            )
            self.order_fields(["kind"])
            self.fields["attendee_names_required"].help_text = _("Ticketed events only.")
            # Creating an event already archived makes it vanish from the list it was made in.
            status = cast(forms.ChoiceField, self.fields["status"])
            status.choices = [choice for choice in status.choices if choice[0] != Event.Status.ARCHIVED]
        elif not self.instance.is_ticketed:
            del self.fields["attendee_names_required"]
        if self.instance._state.adding:
            # Only a new event takes the browser's zone; an existing one keeps its own.
            self.fields["timezone"].widget.attrs["data-browser-timezone"] = "default"
        else:
            cast(forms.ChoiceField, self.fields["timezone"]).choices = _timezone_choices(self.instance.timezone)
        if self.instance.pk:
            tz = self.instance.tzinfo
            for name in LOCAL_DATETIME_FIELDS:
                value = getattr(self.instance, name)
                if value:
                    self.initial[name] = event_local(value, tz).replace(tzinfo=None)
            self.initial["questions_text"] = questions_to_text(self.instance.questions)

    def clean(self):
        cleaned = super().clean()
        tz_name = cleaned.get("timezone") or "UTC"
        tz = zoneinfo.ZoneInfo(tz_name)
        for name in LOCAL_DATETIME_FIELDS:
            value = cleaned.get(name)
            if value is not None:
                # The widget's naive value means wall-clock time at the event.
                cleaned[name] = value.replace(tzinfo=None).replace(tzinfo=tz)
                _check_range(self, name, cleaned)
        # End-before-start and a late deadline are Event.clean()'s rules; the service
        # runs them and the view puts their errors on these fields.
        try:
            cleaned["questions"] = questions_from_text(
                cleaned.get("questions_text", ""), existing=self.instance.questions
            )
        except ValidationError as error:
            self.add_error("questions_text", error)
        return cleaned

    def _post_clean(self):
        # Validation of the model happens in the service; the form only collects values.
        pass

    def service_fields(self) -> dict:
        data = {name: self.cleaned_data[name] for name in self.Meta.fields if name in self.fields}
        data["questions"] = self.cleaned_data["questions"]
        if "kind" in self.fields:
            data["kind"] = self.cleaned_data.get("kind") or Event.Kind.INVITE_ONLY
            if data["kind"] != Event.Kind.TICKETED:
                data["attendee_names_required"] = False
        return data


class TicketTypeForm(forms.ModelForm):
    """A ticket type. The price is typed as a decimal ("25.00") and stored in minor units (2500).

    Sales start and end are typed in the event's time zone, like the event's own dates.
    """

    price_amount = AmountField(label=_("Price"), help_text=_("For example 25.00. Enter 0 for free tickets."))
    currency = forms.ChoiceField(label=_("Currency"), choices=CURRENCY_CHOICES, initial="eur")

    class Meta:
        model = TicketType
        fields = [
            "name",
            "description",
            "price_amount",
            "currency",
            "capacity",
            "sales_start",
            "sales_end",
            "max_per_order",
            "access_code",
            "is_active",
            "position",
        ]
        widgets = {"sales_start": LocalDateTimeInput(), "sales_end": LocalDateTimeInput()}
        help_texts = {
            "access_code": _("Leave empty to list it for everyone; if set, only buyers who enter it see this type."),
            "sales_start": _("Leave empty to sell from now on."),
            "sales_end": _("Leave empty to sell until the event."),
        }

    WINDOW_FIELDS = ("sales_start", "sales_end")

    def __init__(self, *args, event: Event, **kwargs):
        super().__init__(*args, **kwargs)
        self.event = event
        for name in self.WINDOW_FIELDS:
            date_field = cast(forms.DateTimeField, self.fields[name])
            date_field.input_formats = ["%Y-%m-%dT%H:%M", "%Y-%m-%d %H:%M", "%Y-%m-%dT%H:%M:%S"]
        self.fields["capacity"].widget.attrs["min"] = 0
        self.fields["max_per_order"].widget.attrs.update({"min": 1, "max": 100})
        if not self.instance._state.adding:
            currency = self.instance.currency
            if currency not in dict(CURRENCY_CHOICES):
                # A type created through the API may use a currency this short list lacks; keep it choosable.
                currency_field = cast(forms.ChoiceField, self.fields["currency"])
                currency_field.choices = [(currency, currency.upper()), *CURRENCY_CHOICES]
            self.initial["price_amount"] = minor_units_to_text(self.instance.price, currency)
            for name in self.WINDOW_FIELDS:
                value = getattr(self.instance, name)
                if value:
                    self.initial[name] = event_local(value, event.tzinfo).replace(tzinfo=None)

    def clean(self):
        cleaned = super().clean()
        for name in self.WINDOW_FIELDS:
            value = cleaned.get(name)
            if value is not None:
                # The widget's naive value means wall-clock time at the event.
                cleaned[name] = value.replace(tzinfo=None).replace(tzinfo=self.event.tzinfo)
                _check_range(self, name, cleaned)
        amount, currency = cleaned.get("price_amount"), cleaned.get("currency")
        if amount is not None and currency:
            try:
                cleaned["price"] = amount_to_minor_units(amount, currency)
            except ValidationError as error:
                self.add_error("price_amount", error)
        return cleaned

    def _post_clean(self):
        # Validation of the model (capacity against sold, the sales window) happens in the service.
        pass

    def service_fields(self) -> dict:
        data = {name: self.cleaned_data[name] for name in self.Meta.fields if name != "price_amount"}
        data["price"] = self.cleaned_data["price"]
        return data
