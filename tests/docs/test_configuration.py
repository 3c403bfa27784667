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
