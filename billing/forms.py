"""The buyer's form on an event's ticket shop."""

from django import forms
from django.utils.translation import gettext_lazy as _

from billing.services import MAX_TICKETS_PER_ORDER, CheckoutItem, CheckoutRequest
from eventsaas.forms import EventQuestionsMixin
from eventsaas.money import money_format
from eventsaas.validators import validate_no_control_characters


class ShopForm(EventQuestionsMixin, forms.Form):
    """Quantities per ticket type, the buyer, a name per ticket (when asked for) and the event's questions.

    Seats are not checked here: the remaining count shown may be stale by the time
    the form is sent, and only the service's conditional update knows for sure.

    A name per ticket is one field per seat (`attendee_1` ... `attendee_N`), N being the quantities the form
    was given (posted, or carried over as initial values by the shop's "Update" button without JavaScript;
    static/js/shop.js adds and removes them as quantities change). A blank one is an error on that field.
    """

    buyer_name = forms.CharField(
        label=_("Your name"),
        max_length=200,
        validators=[validate_no_control_characters],
        widget=forms.TextInput(attrs={"autocomplete": "name"}),
    )
    buyer_email = forms.EmailField(
        label=_("Email"),
        help_text=_("Your tickets are sent to this address."),
        widget=forms.EmailInput(attrs={"autocomplete": "email"}),
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
            field.widget.attrs["data-price"] = ticket_type.price
            field.widget.attrs["data-currency"] = ticket_type.currency
            field.widget.attrs["data-name"] = ticket_type.name
        self.seat_types = self._chosen_seat_types()
        if names_required:
            for seat, ticket_type in enumerate(self.seat_types, start=1):
                self.fields[self.attendee_name(seat)] = forms.CharField(
                    label=_("Name on ticket %(number)s (%(type)s)") % {"number": seat, "type": ticket_type.name},
                    max_length=200,
                    validators=[validate_no_control_characters],
                    error_messages={"required": _("Enter the name of the person for this ticket.")},
                    widget=forms.TextInput(attrs={"autocomplete": "off", "data-attendee": ""}),
                )
        self.add_question_fields(questions)

    @staticmethod
    def quantity_name(ticket_type) -> str:
        return f"qty_{ticket_type.pk}"

    @staticmethod
    def attendee_name(seat: int) -> str:
        return f"attendee_{seat}"

    def _chosen_seat_types(self) -> list:
        """One ticket type per seat, in the shop's order, from the quantities given; unreadable ones count 0."""
        given = self.data if self.is_bound else self.initial
        seats: list = []
        for ticket_type in self.ticket_types:
            try:
                quantity = int(given.get(self.quantity_name(ticket_type)) or 0)
            except (TypeError, ValueError):
                quantity = 0
            quantity = max(0, min(quantity, ticket_type.max_per_order, MAX_TICKETS_PER_ORDER - len(seats)))
            seats.extend([ticket_type] * quantity)
        return seats

    @property
    def attendee_fields(self) -> list[forms.BoundField]:
        return [self[self.attendee_name(seat)] for seat in range(1, len(self.seat_types) + 1) if self.names_required]

    @property
    def total_display(self) -> str:
        """The price of the tickets chosen, as text; empty for none, or for several currencies (refused anyway)."""
        currencies = {ticket_type.currency for ticket_type in self.seat_types}
        if len(currencies) != 1:
            return ""
        return money_format(sum(ticket_type.price for ticket_type in self.seat_types), currencies.pop())

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
        return cleaned

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
            attendee_names=[data[field.name] for field in self.attendee_fields],
            dietary=data.get("dietary", ""),
            answers=self.answers(),
            access_code=data.get("code", ""),
            language=language,
        )


class WaitlistJoinForm(forms.Form):
    """Join the waitlist of one sold-out ticket type (its id travels as a hidden field)."""

    ticket_type = forms.CharField(widget=forms.HiddenInput, max_length=64)
    email = forms.EmailField(
        label=_("Email"),
        help_text=_("When a seat frees up, it is held for you and the offer is sent to this address."),
        widget=forms.EmailInput(attrs={"autocomplete": "email"}),
    )
    name = forms.CharField(
        label=_("Your name"),
        required=False,
        max_length=200,
        validators=[validate_no_control_characters],
        widget=forms.TextInput(attrs={"autocomplete": "name"}),
    )
    code = forms.CharField(required=False, max_length=40, widget=forms.HiddenInput)


class WaitlistOfferForm(forms.Form):
    """Buy the seat a waitlist offer holds: the buyer's name (the email is the entry's)."""

    buyer_name = forms.CharField(
        label=_("Your name"),
        max_length=200,
        validators=[validate_no_control_characters],
        widget=forms.TextInput(attrs={"autocomplete": "name"}),
    )
