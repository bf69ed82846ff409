from django import forms
from django.conf import settings
from django.contrib import admin
from django.contrib.auth.admin import UserAdmin as DjangoUserAdmin
from django.utils.translation import gettext_lazy as _

from tenants.models import Invitation, Membership, Tenant, User
from tenants.services import (
    membership_changed_by_staff,
    platform_fee_changed_by_staff,
    user_deactivated,
    user_deleted,
)
from tenants.token_state import user_tokens_revoke


class MembershipInline(admin.TabularInline):
    model = Membership
    extra = 0
    autocomplete_fields = ["user"]
    readonly_fields = ["created_at"]


@admin.register(User)
class UserAdmin(DjangoUserAdmin):
    ordering = ["email"]
    list_display = ["email", "first_name", "last_name", "is_staff", "is_active", "date_joined", "last_login"]
    list_filter = ["is_staff", "is_superuser", "is_active"]
    search_fields = ["email", "first_name", "last_name"]
    readonly_fields = ["date_joined", "last_login"]
    fieldsets = [
        (None, {"fields": ["email", "password"]}),
        (_("Personal info"), {"fields": ["first_name", "last_name"]}),
        (_("Permissions"), {"fields": ["is_active", "is_staff", "is_superuser", "groups", "user_permissions"]}),
        (_("Important dates"), {"fields": ["last_login", "date_joined"]}),
    ]
    add_fieldsets = [(None, {"classes": ["wide"], "fields": ["email", "password1", "password2"]})]

    # A new password ends the person's API tokens through User.save(), whichever form set it.

    def save_model(self, request, obj, form, change):
        super().save_model(request, obj, form, change)
        if change and "is_active" in form.changed_data:
            if obj.is_active:
                user_tokens_revoke(user_id=obj.pk)  # publishes the version again; old tokens stay dead
            else:
                user_deactivated(user=obj, acting_user=request.user)

    def delete_model(self, request, obj):
        user_id = obj.pk
        super().delete_model(request, obj)
        user_deleted(user_id=user_id)

    def delete_queryset(self, request, queryset):
        user_ids = list(queryset.values_list("pk", flat=True))
        super().delete_queryset(request, queryset)
        for user_id in user_ids:
            user_deleted(user_id=user_id)


def _memberships_changed_by_staff(request, memberships, *, removed: bool) -> None:
    for membership in memberships:
        membership_changed_by_staff(membership=membership, acting_user=request.user, removed=removed)


PLATFORM_FEE_FIELDS = ["platform_fee_basis_points", "platform_fee_fixed"]


class TenantAdminForm(forms.ModelForm):
    class Meta:
        model = Tenant
        fields = ["name", "slug", *PLATFORM_FEE_FIELDS]

    def clean_platform_fee_basis_points(self):
        value = self.cleaned_data["platform_fee_basis_points"]
        if value is not None and value > 10_000:
            raise forms.ValidationError(_("At most 10000 basis points (a fee of 100 percent)."))
        return value


@admin.register(Tenant)
class TenantAdmin(admin.ModelAdmin):
    # Deleting an organization with orders is refused by Django admin itself, as for an event (events/admin.py):
    # billing's admins grant nobody a delete permission on orders, tickets or the ledger.
    form = TenantAdminForm
    list_display = ["name", "slug", "created_at", "platform_fee_basis_points", "platform_fee_fixed"]
    search_fields = ["name", "slug"]
    readonly_fields = ["created_at", "verified_at"]
    inlines = [MembershipInline]

    def get_fieldsets(self, request, obj=None):
        return [
            (None, {"fields": ["name", "slug", "created_at", "verified_at"]}),
            (
                _("Platform fee"),
                {
                    "fields": PLATFORM_FEE_FIELDS,
                    "description": _(
                        "The application fee the platform takes on this organization's paid orders: a percentage "
                        "of the order's total (in basis points, 250 = 2.5 %%, rounded half up) plus a fixed amount "
                        "in the order currency's minor units (cents), never more than the total; free orders pay "
                        "nothing. A new value applies to orders started from now on; an order keeps the fee it "
                        "was created with. Empty fields use the platform's default: %(basis_points)s basis points "
                        "plus %(fixed)s."
                    )
                    % {"basis_points": settings.PLATFORM_FEE_BASIS_POINTS, "fixed": settings.PLATFORM_FEE_FIXED},
                },
            ),
        ]

    def save_model(self, request, obj, form, change):
        super().save_model(request, obj, form, change)
        if any(field in form.changed_data for field in PLATFORM_FEE_FIELDS):
            platform_fee_changed_by_staff(tenant=obj, acting_user=request.user)

    def save_formset(self, request, form, formset, change):
        if formset.model is not Membership:
            return super().save_formset(request, form, formset, change)
        # The rows as they were: a membership moved to another user ends the old user's access too.
        before = {m.pk: m for m in Membership.objects.for_tenant(form.instance)} if change else {}
        super().save_formset(request, form, formset, change)
        changed = []
        for membership, _fields in formset.changed_objects:
            changed.append(membership)
            previous = before.get(membership.pk)
            if previous is not None and previous.user_id != membership.user_id:
                changed.append(previous)
        _memberships_changed_by_staff(request, changed, removed=False)
        _memberships_changed_by_staff(request, formset.deleted_objects, removed=True)

    def delete_model(self, request, obj):
        members = list(Membership.objects.for_tenant(obj))
        super().delete_model(request, obj)
        _memberships_changed_by_staff(request, members, removed=True)

    def delete_queryset(self, request, queryset):
        members = list(Membership.objects.filter(tenant_id__in=list(queryset.values_list("pk", flat=True))))
        super().delete_queryset(request, queryset)
        _memberships_changed_by_staff(request, members, removed=True)


@admin.register(Membership)
class MembershipAdmin(admin.ModelAdmin):
    list_display = ["user", "tenant", "role", "created_at"]
    list_filter = ["role", "tenant"]
    search_fields = ["user__email", "tenant__name"]
    list_select_related = ["user", "tenant"]
    autocomplete_fields = ["user", "tenant"]
    readonly_fields = ["created_at"]

    def save_model(self, request, obj, form, change):
        previous = Membership.objects.filter(pk=obj.pk).first() if change else None
        super().save_model(request, obj, form, change)
        if previous is not None and form.changed_data:
            changed = [previous] if previous.user_id == obj.user_id else [previous, obj]
            _memberships_changed_by_staff(request, changed, removed=False)

    def delete_model(self, request, obj):
        super().delete_model(request, obj)
        _memberships_changed_by_staff(request, [obj], removed=True)

    def delete_queryset(self, request, queryset):
        members = list(queryset)
        # By primary key: the changelist's queryset may filter across relations (user, tenant),
        # and MongoDB deletes from one collection only (found by the MongoDB test pass).
        super().delete_queryset(request, Membership.objects.filter(pk__in=[m.pk for m in members]))
        _memberships_changed_by_staff(request, members, removed=True)


@admin.register(Invitation)
class InvitationAdmin(admin.ModelAdmin):
    list_display = ["email", "tenant", "role", "created_at", "expires_at", "accepted_at"]
    list_filter = ["role", "tenant"]
    search_fields = ["email", "tenant__name"]
    list_select_related = ["tenant"]
    readonly_fields = ["token", "created_at", "accepted_at", "accepted_by", "invited_by"]
    exclude = ["token"]
