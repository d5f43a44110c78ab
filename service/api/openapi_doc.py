"""What /openapi.json adds to FastAPI's document: the error answers every route gives, and
each operation's scope."""

from __future__ import annotations

from typing import Any

from fastapi import FastAPI

from trajhub.service.api.scopes import SCOPE_EXTENSION, default_scope

_ERROR_REF = {"$ref": "#/components/schemas/ErrorDetail"}


def document_errors(app: FastAPI, auth_required: bool) -> None:
    """Make /openapi.json say what the server answers, so that a client generated from it, or a
    tool that checks answers against it, meets no surprise:

    - an error answer of a REST route is JSON (`ErrorDetail`), also where the route's success
      is NDJSON or a JSON Schema document, or where the route describes it in words only;
    - a REST route that takes a body lists 415 (`declared_content_type`);
    - an NDJSON answer's schema is its lines' model;
    - with API keys off, the bearer key is optional (`security: [{}, ...]`), since a request
      without one is served."""
    generate = app.openapi

    def openapi() -> dict[str, Any]:
        schema = generate()
        for path, operations in schema.get("paths", {}).items():
            for operation in operations.values():
                responses = operation.setdefault("responses", {})
                if path.startswith("/api/"):
                    if "requestBody" in operation and "415" not in responses:
                        responses["415"] = {
                            "description": "the body's Content-Type is not one the route "
                                           "takes (`detail` names them)",
                            "content": {"application/json": {"schema": dict(_ERROR_REF)}}}
                    for code, response in responses.items():
                        content = response.get("content")
                        for media in (content or {}).values():
                            schema_ = media.get("schema") or {}
                            # FastAPI writes a streamed route's model as {"type": "string",
                            # "$ref": ...}, which no body fits: NDJSON lines are each the model
                            if "$ref" in schema_ and schema_.get("type") == "string":
                                del schema_["type"]
                        if code[:1] in "45" and "application/json" not in (content or {}):
                            response["content"] = {"application/json": {
                                "schema": dict(_ERROR_REF)}}
                # the document is built once and post-processed on every read: add {} once
                security = operation.get("security")
                if not auth_required and security and {} not in security:
                    operation["security"] = [{}, *security]
        return schema

    app.openapi = openapi  # type: ignore[method-assign]


def document_scopes(app: FastAPI) -> None:
    """Write each REST operation's scope into /openapi.json (`x-trajhub-scope`): the declared
    one, else its method's default."""
    generate = app.openapi

    def openapi() -> dict[str, Any]:
        schema = generate()
        for path, operations in schema.get("paths", {}).items():
            if path.startswith("/api/"):
                for method, operation in operations.items():
                    operation.setdefault(SCOPE_EXTENSION, default_scope(method))
        return schema

    app.openapi = openapi  # type: ignore[method-assign]
