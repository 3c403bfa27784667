"""factory_boy factories for the models tests need."""

import factory
from faker import Faker

from tenants.models import Tenant

fake = Faker()


class TenantFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Tenant
        django_get_or_create = ("slug",)

    slug = factory.Sequence(lambda n: f"tenant-{n}")
    name = factory.LazyAttribute(lambda tenant: tenant.slug.title())


def message_payload(**overrides: object) -> dict:
    """A realistic message body for the append endpoint."""
    body = {"role": "user", "content": fake.paragraph(nb_sentences=3)}
    body.update(overrides)
    return body
