"""The OpenAPI schema validates and generates without a warning: what `spectacular --validate --fail-on-warn` checks."""

from django.core.management import call_command

from tests.api.sweep_fixtures import api_schema


def test_the_schema_validates_without_warnings(tmp_path):
    call_command("spectacular", "--validate", "--fail-on-warn", "--file", str(tmp_path / "schema.yaml"))


def test_both_rsvp_bodies_are_in_the_schema_with_examples():
    schema = api_schema()
    for path, method in [("/api/v1/rsvp", "put"), ("/api/v1/events/{event_id}/guests/{guest_id}/rsvp", "put")]:
        body = schema["paths"][path][method]["requestBody"]["content"]["application/json"]
        assert body["schema"] == {"$ref": "#/components/schemas/RsvpAnswerRequest"}
        examples = [example["value"] for example in body["examples"].values()]
        assert any("members" in value for value in examples) and any("attending" in value for value in examples)
    shapes = schema["components"]["schemas"]["RsvpAnswerRequest"]["oneOf"]
    assert [shape["$ref"].rsplit("/", 1)[-1] for shape in shapes] == [
        "SingleNumberAnswerRequest",
        "PerMemberAnswerRequest",
    ]
    conflict = schema["paths"]["/api/v1/rsvp"]["put"]["responses"]["409"]["content"]["application/json"]["schema"]
    assert conflict == {"$ref": "#/components/schemas/NeedsConfirmation"}
