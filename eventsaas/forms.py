"""Form helpers shared by the page views."""

from typing import TYPE_CHECKING, Any

from django import forms
from django.core.exceptions import ValidationError
from django.forms.renderers import Jinja2, TemplatesSetting
from django.template import TemplateDoesNotExist
from django.utils.functional import cached_property

from eventsaas.money import amount_parse


def add_service_errors(form, error: ValidationError) -> None:
    """Show a service's ValidationError on the form: on its field when the form has it, else above the form."""
    by_field = error.error_dict if hasattr(error, "error_dict") else {None: error.error_list}
    for field, errors in by_field.items():
        form.add_error(field if field in form.fields else None, errors)


class EventQuestionsMixin:
    """Form fields for an event's custom questions (`q_<key>`), and the answers keyed by question key.

    Shared by the RSVP form and the ticket shop: a question with choices is a
    select, one without is free text; answers are optional.
    """

    if TYPE_CHECKING:  # given by the form class this mixes into
        fields: dict[str, forms.Field]
        cleaned_data: dict[str, Any]

        def __getitem__(self, name: str) -> forms.BoundField: ...

    def add_question_fields(self, questions) -> None:
        self.question_keys = []
        for question in questions:
            name = f"q_{question['key']}"
            self.question_keys.append((name, question["key"]))
            if question.get("choices"):
                self.fields[name] = forms.ChoiceField(
                    label=question["label"],
                    required=False,
                    choices=[("", "—")] + [(choice, choice) for choice in question["choices"]],
                )
            else:
                self.fields[name] = forms.CharField(label=question["label"], required=False, max_length=500)

    @property
    def question_fields(self):
        return [self[name] for name, _key in self.question_keys]

    def answers(self) -> dict:
        return {key: self.cleaned_data[name] for name, key in self.question_keys if self.cleaned_data.get(name)}


class AmountField(forms.CharField):
    """A decimal amount as typed; the form converts it to minor units once it knows the currency."""

    def __init__(self, **kwargs):
        kwargs.setdefault("max_length", 20)
        super().__init__(**kwargs)
        self.widget.attrs.update({"inputmode": "decimal", "autocomplete": "off"})

    def clean(self, value):
        text = super().clean(value)  # required and max_length apply to the text typed
        return None if text in self.empty_values else amount_parse(text)


class FormRenderer(TemplatesSetting):
    """The site's form renderer (settings.FORM_RENDERER): Django's, with the field template in templates/forms/
    that puts a checkbox inside its label on a line of its own."""

    field_template_name = "forms/field.html"

    #: Django's own widget, label and error templates, which it ships for Jinja2 too.
    DJANGO_FORM_TEMPLATES = "django/forms/"

    @cached_property
    def _jinja2(self):
        return Jinja2().engine

    def get_template(self, template_name):
        # Django's widgets through Jinja2: the same HTML about three times faster than the template
        # language, and the household form of the guest's RSVP page was most of that page's time
        # (bench/guest_http.py). Ours (forms/field.html) and the admin's widgets stay in templates/.
        if template_name.startswith(self.DJANGO_FORM_TEMPLATES):
            try:
                return self._jinja2.get_template(template_name)
            except TemplateDoesNotExist:
                pass
        return super().get_template(template_name)
