import zoneinfo

from django import forms
from django.core.exceptions import ValidationError
from django.utils import timezone
from django.utils.translation import gettext_lazy as _

from events.models import Event, known_timezones
from events.services import questions_from_text, questions_to_text

LOCAL_DATETIME_FIELDS = ("starts_at", "ends_at", "rsvp_deadline")


class LocalDateTimeInput(forms.DateTimeInput):
    input_type = "datetime-local"

    def __init__(self, **kwargs):
        super().__init__(format="%Y-%m-%dT%H:%M", **kwargs)


def _timezone_choices():
    return [(name, name) for name in sorted(known_timezones()) if "/" in name or name == "UTC"]


class EventForm(forms.ModelForm):
    """Dates are typed in the event's own time zone and stored in UTC."""

    timezone = forms.ChoiceField(label=_("Time zone"), choices=_timezone_choices, initial="UTC")
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
            self.fields[name].input_formats = ["%Y-%m-%dT%H:%M", "%Y-%m-%d %H:%M", "%Y-%m-%dT%H:%M:%S"]
        if self.instance.pk:
            tz = self.instance.tzinfo
            for name in LOCAL_DATETIME_FIELDS:
                value = getattr(self.instance, name)
                if value:
                    self.initial[name] = timezone.localtime(value, tz).replace(tzinfo=None)
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
        data = {name: self.cleaned_data[name] for name in self.Meta.fields}
        data["questions"] = self.cleaned_data["questions"]
        return data
