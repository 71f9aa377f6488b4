"""The published OpenAPI, made to say what the API does.

FastAPI documents a 422 for every validated request and nothing else that can go
wrong; this API answers 400 instead, and every error is a problem document. The
schema is rewritten once: 422 goes, the errors any operation can give are listed
with ``application/problem+json`` (413 where there is a body, 404 where a path
names something), and ``default`` covers the rest.
"""

from typing import Any

from fastapi import FastAPI
from fastapi.openapi.utils import get_openapi

from benchwright_gateway.api.errors import PROBLEM_JSON

PROBLEM = {
    "type": "object",
    "description": "An RFC 9457 problem document.",
    "properties": {
        "type": {"type": "string"},
        "title": {"type": "string"},
        "status": {"type": "integer"},
        "detail": {"type": "string"},
        "field": {"type": "string", "description": "The request field at fault."},
        "code": {"type": "string", "description": "A stable, machine-readable reason."},
    },
    "required": ["type", "title", "status"],
}

# What any operation can answer.
ERRORS = {
    "400": "The request is invalid; `field` names what.",
    "401": "No credentials, or not valid ones.",
    "403": "The credentials lack a scope the operation needs.",
    "409": "A conflict: the state moved on, or a key was reused.",
    "500": "An internal error.",
    "503": "A service the request needs is not answering; retry.",
    "504": "A service the request needs did not answer in time; retry.",
}
WITH_BODY = {"413": "The request body is larger than the API accepts."}
WITH_PATH = {"404": "What the path names does not exist, or is not the caller's."}


def _problem(description: str) -> dict[str, Any]:
    return {
        "description": description,
        "content": {PROBLEM_JSON: {"schema": {"$ref": "#/components/schemas/Problem"}}},
    }


def truthful_schema(app: FastAPI) -> dict[str, Any]:
    schema = get_openapi(
        title=app.title, version=app.version, description=app.description, routes=app.routes
    )
    schemas = schema.setdefault("components", {}).setdefault("schemas", {})
    schemas["Problem"] = PROBLEM
    for name in ("HTTPValidationError", "ValidationError"):
        schemas.pop(name, None)
    for path, item in schema.get("paths", {}).items():
        for method, operation in item.items():
            responses = operation.setdefault("responses", {})
            responses.pop("422", None)
            wanted = dict(ERRORS)
            if method in ("post", "put", "patch"):
                wanted |= WITH_BODY
            if "{" in path:
                wanted |= WITH_PATH
            for code, description in wanted.items():
                responses.setdefault(code, _problem(description))
            responses.setdefault("default", _problem("Any other error."))
    return schema


def install(app: FastAPI) -> None:
    def openapi() -> dict[str, Any]:
        if app.openapi_schema is None:
            app.openapi_schema = truthful_schema(app)
        return app.openapi_schema

    app.openapi = openapi  # type: ignore[method-assign]
