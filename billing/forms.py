"""The buyer's form on an event's ticket shop."""

from django import forms
from django.utils.translation import gettext_lazy as _
from django.utils.translation import ngettext

from billing.services import CheckoutItem, CheckoutRequest
from eventsaas.forms import EventQuestionsMixin
from eventsaas.money import money_format


class ShopForm(EventQuestionsMixin, forms.Form):
    """Quantities per ticket type, the buyer, a name per ticket (when asked for) and the event's questions.

    Seats are not checked here: the remaining count shown may be stale by the time
    the form is sent, and only the service's conditional update knows for sure.
    """

    buyer_name = forms.CharField(
        label=_("Your name"), max_length=200, widget=forms.TextInput(attrs={"autocomplete": "name"})
    )
    buyer_email = forms.EmailField(
        label=_("Email"),
        help_text=_("Your tickets are sent to this address."),
        widget=forms.EmailInput(attrs={"autocomplete": "email"}),
    )
    attendees = forms.CharField(
        label=_("Name on each ticket"),
        help_text=_("One name per line, one line per ticket, in the order of the tickets above."),
        required=False,
        max_length=20000,
        widget=forms.Textarea(attrs={"rows": 3, "autocomplete": "off"}),
    )
    dietary = forms.CharField(
        label=_("Dietary needs or allergies"),
        required=False,
        max_length=1000,
        widget=forms.Textarea(attrs={"rows": 2}),
    )
    # The access code that unlocked hidden ticket types, carried from ?code= to the POST.
    code = forms.CharField(required=False, max_length=40, widget=forms.HiddenInput)

    def __init__(self, *args, ticket_types=(), questions=(), names_required=False, **kwargs):
        super().__init__(*args, **kwargs)
        self.ticket_types = list(ticket_types)
        self.names_required = names_required
        if not names_required:
            del self.fields["attendees"]
        else:
            self.fields["attendees"].required = True
        for ticket_type in self.ticket_types:
            limit = min(ticket_type.max_per_order, ticket_type.remaining)
            field = self.fields[self.quantity_name(ticket_type)] = forms.IntegerField(
                label=ticket_type.name,
                min_value=0,
                # Only the per-order maximum: more than what is left is the service's SoldOut, told by name.
                max_value=ticket_type.max_per_order,
                required=False,
                initial=0,
                error_messages={
                    "max_value": _("At most %(limit_value)s per order."),
                    "min_value": _("Choose 0 or more."),
                    "invalid": _("Enter a whole number."),
                },
                widget=forms.NumberInput(attrs={"inputmode": "numeric", "class": "quantity", "data-quantity": ""}),
            )
            # The browser offers what can be had now; IntegerField would set the per-order maximum.
            field.widget.attrs["max"] = limit
        self.add_question_fields(questions)

    @staticmethod
    def quantity_name(ticket_type) -> str:
        return f"qty_{ticket_type.pk}"

    @property
    def ticket_rows(self) -> list[tuple]:
        """(ticket type, its quantity field, formatted price) in the shop's order."""
        return [(t, self[self.quantity_name(t)], money_format(t.price, t.currency)) for t in self.ticket_types]

    def clean_code(self):
        return self.cleaned_data["code"].strip()

    def clean(self):
        cleaned = super().clean()
        quantities = [cleaned.get(self.quantity_name(t)) or 0 for t in self.ticket_types]
        total = sum(quantities)
        if not any(self.has_error(self.quantity_name(t)) for t in self.ticket_types) and total == 0:
            raise forms.ValidationError(_("Choose at least one ticket."), code="no_tickets")
        if self.names_required and "attendees" in cleaned and total:
            count = len(self._names(cleaned["attendees"]))
            if count != total:
                self.add_error(
                    "attendees",
                    ngettext(
                        "Give one name per ticket: %(count)s name, one per line.",
                        "Give one name per ticket: %(count)s names, one per line.",
                        total,
                    )
                    % {"count": total},
                )
        return cleaned

    @staticmethod
    def _names(text: str) -> list[str]:
        return [line.strip() for line in (text or "").splitlines() if line.strip()]

    def checkout_request(self, *, language: str) -> CheckoutRequest:
        data = self.cleaned_data
        return CheckoutRequest(
            items=[
                CheckoutItem(ticket_type_id=str(t.pk), quantity=data.get(self.quantity_name(t)) or 0)
                for t in self.ticket_types
                if data.get(self.quantity_name(t))
            ],
            buyer_name=data["buyer_name"],
            buyer_email=data["buyer_email"],
            attendee_names=self._names(data.get("attendees", "")),
            dietary=data.get("dietary", ""),
            answers=self.answers(),
            access_code=data.get("code", ""),
            language=language,
        )
