from django.db import migrations, models


def offers_keep_their_emailed_link(apps, schema_editor):
    """Entries offered before this migration were emailed a link with `token` (rotated at the offer then):
    it stays their offer link, so it can still buy the held seat."""
    WaitlistEntry = apps.get_model("billing", "WaitlistEntry")
    for pk, token in WaitlistEntry.objects.filter(status="offered").values_list("pk", "token"):
        WaitlistEntry.objects.filter(pk=pk).update(offer_token=token)


class Migration(migrations.Migration):

    dependencies = [
        ('billing', '0009_mark_ticket_types_with_a_waitlist'),
    ]

    operations = [
        migrations.AddField(
            model_name='waitlistentry',
            name='offer_token',
            field=models.CharField(blank=True, default='', editable=False, max_length=32, verbose_name='offer token'),
        ),
        migrations.RunPython(offers_keep_their_emailed_link, migrations.RunPython.noop),
    ]
