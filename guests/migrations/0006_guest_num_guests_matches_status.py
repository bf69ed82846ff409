# coming <=> num_guests >= 1, once 0005 has reconciled the rows the old rule wrote.

from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('guests', '0005_household_answers_data'),
    ]

    operations = [
        migrations.AddConstraint(
            model_name='guest',
            constraint=models.CheckConstraint(condition=models.Q(models.Q(('num_guests__gte', 1), ('status', 'coming')), models.Q(models.Q(('status', 'coming'), _negated=True), ('num_guests', 0)), _connector='OR'), name='guest_num_guests_matches_status'),
        ),
    ]
