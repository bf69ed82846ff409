from django import forms
from django.contrib.auth import password_validation
from django.contrib.auth.forms import AuthenticationForm
from django.utils.translation import gettext_lazy as _

from tenants.models import Role


class EmailAuthenticationForm(AuthenticationForm):
    username = forms.EmailField(
        label=_("Email"), widget=forms.EmailInput(attrs={"autofocus": True, "autocomplete": "email"})
    )

    def clean_username(self):
        # Accounts store the whole address in lower case (see UserManager/user_signup).
        return self.cleaned_data["username"].lower()


class SignupForm(forms.Form):
    organization_name = forms.CharField(label=_("Organization name"), max_length=200)
    first_name = forms.CharField(label=_("First name"), max_length=150, required=False)
    last_name = forms.CharField(label=_("Last name"), max_length=150, required=False)
    email = forms.EmailField(label=_("Email"), widget=forms.EmailInput(attrs={"autocomplete": "email"}))
    password = forms.CharField(
        label=_("Password"),
        strip=False,
        widget=forms.PasswordInput(attrs={"autocomplete": "new-password"}),
        help_text=password_validation.password_validators_help_text_html(),
    )

    def clean(self):
        cleaned = super().clean()
        password = cleaned.get("password")
        if password:
            try:
                password_validation.validate_password(password)
            except forms.ValidationError as error:
                self.add_error("password", error)
        return cleaned


class InvitationForm(forms.Form):
    email = forms.EmailField(label=_("Email"))
    # Owners are made from members (the team's role change), never invited (tenants.services.invitation_create).
    role = forms.ChoiceField(
        label=_("Role"),
        choices=[(value, label) for value, label in Role.choices if value != Role.OWNER],
        initial=Role.ADMIN,
    )


class TeamRoleForm(forms.Form):
    role = forms.ChoiceField(
        label=_("Role"),
        choices=Role.choices,
    )


class InvitationSignupForm(forms.Form):
    first_name = forms.CharField(label=_("First name"), max_length=150, required=False)
    last_name = forms.CharField(label=_("Last name"), max_length=150, required=False)
    password = forms.CharField(
        label=_("Password"), strip=False, widget=forms.PasswordInput(attrs={"autocomplete": "new-password"})
    )

    def clean_password(self):
        password = self.cleaned_data["password"]
        password_validation.validate_password(password)
        return password
