from django.utils.functional import SimpleLazyObject

from tenants.selectors import memberships_of


def tenancy(request):
    user = getattr(request, "user", None)
    if user is None or not user.is_authenticated:
        return {}
    # Lazy: the query runs only on pages that render the organization switcher.
    return {"user_memberships": SimpleLazyObject(lambda: list(memberships_of(user=user)))}
