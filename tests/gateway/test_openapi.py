"""The published OpenAPI is a valid document, and every JSON success answer in it
has a schema that says what the answer holds: no bare ``{}`` or object without
properties, anywhere in the app.

This is written over the whole app on purpose: an operation still answering a bare
object fails here (one test per operation), and the fix is a response model from
``benchwright_shared.api`` on its route.
"""

import importlib.util
import tempfile
from collections.abc import Iterator
from functools import cache
from pathlib import Path
from typing import Any

import pytest
from jsonschema import Draft202012Validator

from benchwright_gateway.app import GatewayService
from benchwright_shared.settings import Settings

METHODS = ("get", "put", "post", "delete", "options", "head", "patch", "trace")
JSON = "application/json"


@cache
def published() -> dict[str, Any]:
    """The gateway's ``/openapi.json``, built once (no broker is needed to build it)."""
    with tempfile.TemporaryDirectory(prefix="bw-openapi-") as data_dir:
        # SQLite in a scratch folder whatever the environment says: only the schema is read.
        settings = Settings(data_dir=Path(data_dir), database_url=None, nats_url=None)
        service = GatewayService(settings)
        try:
            return service.http.openapi()
        finally:
            service.views.close()
            service.app.close()


def operations() -> list[tuple[str, str]]:
    return [
        (method, path)
        for path, item in published()["paths"].items()
        for method in item
        if method in METHODS
    ]


def resolve(schema: dict[str, Any]) -> dict[str, Any]:
    components = published()["components"]["schemas"]
    while "$ref" in schema:
        schema = components[schema["$ref"].removeprefix("#/components/schemas/")]
    return schema


def refs(node: Any) -> Iterator[str]:
    if isinstance(node, dict):
        if isinstance(node.get("$ref"), str):
            yield node["$ref"]
        for value in node.values():
            yield from refs(value)
    elif isinstance(node, list):
        for value in node:
            yield from refs(value)


def bare(schema: dict[str, Any], where: str) -> Iterator[str]:
    """Where ``schema`` answers an object that declares none of its keys."""
    schema = resolve(schema)
    branches = [*schema.get("anyOf", []), *schema.get("oneOf", []), *schema.get("allOf", [])]
    if branches:
        for i, branch in enumerate(branches):
            if resolve(branch).get("type") != "null":
                yield from bare(branch, f"{where}[{i}]")
        return
    kind = schema.get("type")
    if kind == "array":
        yield from bare(schema.get("items") or {}, f"{where}.items")
    elif kind in (None, "object") and not schema.get("properties"):
        yield where


def test_the_document_is_a_valid_openapi_document() -> None:
    document = published()
    if importlib.util.find_spec("openapi_spec_validator") is not None:
        from openapi_spec_validator import validate

        validate(document)
    assert document["openapi"].startswith("3.")
    assert document["info"]["title"] and document["info"]["version"]
    components = document["components"]["schemas"]
    for name, schema in components.items():
        Draft202012Validator.check_schema(schema)  # OpenAPI 3.1 schemas are JSON Schema
        assert name.replace(".", "_").replace("-", "_").isidentifier(), name
    missing = {
        ref for ref in refs(document) if ref.removeprefix("#/components/schemas/") not in components
    }
    assert not missing, f"dangling references: {sorted(missing)}"
    ids = [
        op.get("operationId")
        for item in document["paths"].values()
        for method, op in item.items()
        if method in METHODS
    ]
    assert len(ids) == len(set(ids)), "operationIds repeat"
    for path, item in document["paths"].items():
        assert path.startswith("/"), path
        for method, op in item.items():
            if method in METHODS:
                assert op.get("responses"), f"{method.upper()} {path} declares no answer"


@pytest.mark.parametrize(("method", "path"), operations(), ids=lambda v: str(v))
def test_every_json_success_answer_has_a_schema(method: str, path: str) -> None:
    operation = published()["paths"][path][method]
    found = []
    for code, response in operation["responses"].items():
        if not code.startswith("2"):
            continue
        content = response.get("content") or {}
        if JSON in content:
            found += bare(content[JSON].get("schema") or {}, f"{code} {JSON}")
    assert not found, (
        f"{method.upper()} {path} answers an object that declares none of its keys at "
        f"{found}: give its route a response model from benchwright_shared.api"
    )
