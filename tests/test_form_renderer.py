"""The site's form renderer draws Django's widgets through Jinja2 (for speed) and must give the HTML the template
language gives, for every kind of widget our forms use, with values, errors and hostile text."""

import pytest
from django import forms
from django.forms.renderers import TemplatesSetting
from django.test.html import parse_html

from eventsaas.forms import FormRenderer


class EveryWidget(forms.Form):
    name = forms.CharField(max_length=20, help_text="As on the invitation")
    email = forms.EmailField(required=False)
    count = forms.IntegerField(min_value=0, max_value=9)
    notes = forms.CharField(widget=forms.Textarea, required=False)
    agree = forms.BooleanField(label="Yes, refund", help_text="The money goes back to the card")
    status = forms.ChoiceField(choices=[("", "All"), ("coming", "Coming"), ("declined", "Declined")])
    meal = forms.ChoiceField(choices=[("fish", "Fish"), ("meat", "Meat")], widget=forms.RadioSelect)
    days = forms.MultipleChoiceField(choices=[("sat", "Sat"), ("sun", "Sun")], widget=forms.CheckboxSelectMultiple)
    when = forms.DateTimeField(required=False, widget=forms.DateTimeInput(attrs={"type": "datetime-local"}))
    secret = forms.CharField(widget=forms.PasswordInput, required=False)
    token = forms.CharField(widget=forms.HiddenInput, required=False)
    upload = forms.FileField(required=False)
    # Labels can be an organizer's text (an event's questions): escaped in both branches of the field template.
    question = forms.CharField(label='"><script>alert(2)</script>', required=False)
    consent = forms.BooleanField(label='"><script>alert(3)</script>', required=False)


class TemplateLanguageOnly(TemplatesSetting):
    """The reference: the same field template, every widget through the template language."""

    field_template_name = FormRenderer.field_template_name


HOSTILE = '"><script>alert(1)</script>&amp;'


@pytest.mark.parametrize(
    "data",
    [
        None,
        {"name": HOSTILE, "count": "12", "status": "coming", "meal": "fish", "days": ["sat", "sun"], "notes": HOSTILE},
        {"name": "", "email": "not an email", "status": "nope", "meal": "soup"},
    ],
    ids=["unbound", "bound-with-hostile-text", "bound-with-errors"],
)
def test_every_widget_renders_the_same_html_as_the_template_language(data):
    ours = EveryWidget(data, renderer=FormRenderer())
    reference = EveryWidget(data, renderer=TemplateLanguageOnly())
    if data is not None:
        assert not ours.is_valid() and not reference.is_valid()

    for name in EveryWidget.base_fields:
        assert parse_html(str(ours[name])) == parse_html(str(reference[name])), name
        assert parse_html(ours[name].as_field_group()) == parse_html(reference[name].as_field_group()), name
        assert parse_html(ours[name].label_tag()) == parse_html(reference[name].label_tag()), name
    assert parse_html(str(ours.errors)) == parse_html(str(reference.errors))
    assert parse_html(ours.render()) == parse_html(reference.render())
    assert "<script>" not in ours.render()


def test_django_widgets_come_from_jinja2_and_ours_from_the_templates_folder():
    renderer = FormRenderer()
    assert type(renderer.get_template("django/forms/widgets/input.html")).__module__.endswith("jinja2")
    assert type(renderer.get_template("forms/field.html")).__module__.endswith("django")
    # The admin's own widget templates exist only for the template language.
    assert type(renderer.get_template("admin/widgets/related_widget_wrapper.html")).__module__.endswith("django")
