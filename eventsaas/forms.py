"""Form helpers shared by the page views."""

from django.core.exceptions import ValidationError


def add_service_errors(form, error: ValidationError) -> None:
    """Show a service's ValidationError on the form: on its field when the form has it, else above the form."""
    by_field = error.error_dict if hasattr(error, "error_dict") else {None: error.error_list}
    for field, errors in by_field.items():
        form.add_error(field if field in form.fields else None, errors)
