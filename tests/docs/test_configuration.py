"""The configuration reference is the settings' own: regenerated, it is the page in the repository."""

from docs.generate import configuration


def test_the_configuration_page_is_what_the_settings_generate_now():
    assert configuration.OUTPUT.read_text() == configuration.render(), (
        "docs/configuration.md differs from the settings: run `python -m docs.generate configuration` and commit it."
    )


def test_every_variable_read_outside_the_settings_is_described():
    assert configuration.undocumented_process_variables() == []


def test_every_tenant_overridable_setting_is_in_the_reference():
    page = configuration.OUTPUT.read_text()
    overridable = page.split("## What a tenant may override", 1)[1]
    for name in configuration._tuple_of_strings(configuration.SETTINGS / "base.py", "MEMORY_TENANT_OVERRIDABLE"):
        assert f"| `{name}` |" in overridable


def test_what_the_override_table_says_a_tenant_may_set_is_what_the_tenant_settings_accept():
    """Each override's documented rule names the type ``validate_setting_overrides`` takes: a value of
    that type is accepted, and a value of another type (a string for a boolean) is refused."""
    import pytest
    from django.conf import settings
    from django.core.exceptions import ValidationError

    from tenants.models import validate_setting_overrides

    page = configuration.OUTPUT.read_text()
    overridable = page.split("## What a tenant may override", 1)[1]
    rules = {line.split("`")[1]: line.rsplit("|", 2)[1].strip() for line in overridable.splitlines() if line.startswith("| `")}
    for name in settings.MEMORY_TENANT_OVERRIDABLE:
        default, rule = getattr(settings, name), rules[name]
        if isinstance(default, bool):
            assert rule.startswith("true or false"), (name, rule)
            validate_setting_overrides({name: not default})
            with pytest.raises(ValidationError):
                validate_setting_overrides({name: str(default).lower()})
        elif isinstance(default, int | float):
            assert "number" in rule, (name, rule)
            with pytest.raises(ValidationError):
                validate_setting_overrides({name: str(default)})
        else:
            assert "number" not in rule, (name, rule)
            assert "true or false" not in rule, (name, rule)
