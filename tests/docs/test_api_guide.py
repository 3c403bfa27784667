"""The API guide shows every operation of the API: an endpoint added without its guide entry fails here."""

import re

from drf_spectacular.generators import SchemaGenerator

from docs.generate import api_guide


def schema_operations() -> set[tuple[str, str]]:
    schema = SchemaGenerator().get_schema(request=None, public=True)
    return {(method.upper(), path) for path, methods in schema["paths"].items() for method in methods}


def test_every_operation_of_the_schema_has_a_section_in_the_api_guide(db):
    guide = api_guide.OUTPUT.read_text()
    missing = [f"{method} {path}" for method, path in sorted(schema_operations()) if f"### `{method} {path}`" not in guide]
    assert not missing, (
        f"docs/api.md shows no {', '.join(missing)}: add it to docs/generate/api_guide.py and run `python -m docs.generate api_guide`."
    )


def test_every_operation_of_the_schema_has_a_purpose_line_in_the_generator(db):
    assert schema_operations() <= set(api_guide.PURPOSES)


def test_the_api_guide_shows_no_operation_the_schema_lacks(db):
    shown = set(re.findall(r"^### `(\w+) (/api/v1/\S*)`$", api_guide.OUTPUT.read_text(), flags=re.MULTILINE))
    assert shown == schema_operations()


def test_every_example_of_the_api_guide_has_a_request_and_an_answer():
    guide = api_guide.OUTPUT.read_text()
    assert guide.count("```bash\ncurl ") == guide.count("Answer: `")
