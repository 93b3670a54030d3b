"""The OpenAPI document, derived from the table of operations.

The shapes are in ``schemas``; which operation has which, its parameters, its tag and
every status it can answer come from the table, so the document cannot list a route the
service does not serve, or miss one it does. Operation ids and summaries follow the form
FastAPI gave them, which the document has always had.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from fake_contextq._version import __version__
from fake_contextq.service import schemas as oa
from fake_contextq.service.operations import Operation

__all__ = ["PATH_PARAMETERS", "TITLE", "VERSION", "document"]

TITLE = "fake-contextq"
VERSION = __version__
DESCRIPTION = "A strict fake of ContextQ's HTTP API."
#: Each path parameter's schema, by its name in the templates.
_DIGITS: oa.Schema = {"type": "string", "pattern": "^[0-9]+$"}
PATH_PARAMETERS: dict[str, oa.Schema] = {
    "context_id": _DIGITS,
    "external_id": {"type": "string", "minLength": 1},
    "slug": {"type": "string"},
    "session_id": _DIGITS,
    "task_id": _DIGITS,
    "search_id": _DIGITS,
    "job_id": _DIGITS,
}


def _operation(op: Operation) -> dict[str, Any]:
    route = op.route
    doc: dict[str, Any] = {
        "tags": [op.tag],
        "summary": route.name.replace("_", " ").title(),
        "operationId": re.sub(r"\W", "_", route.name + route.template) + "_" + route.method.lower(),
    }
    extra: oa.Schema = {}
    if op.path_names:
        extra = oa.merged(*(oa.path_param(n, PATH_PARAMETERS[n]) for n in op.path_names))
    if op.query:
        extra = oa.merged(extra, oa.query_params(*op.query))
    if op.body_schema is not None:
        extra = oa.merged(extra, oa.json_body(op.body_schema))
    doc.update(extra)
    responses = oa.responses(route.status, op.answer_schema, *op.errors)
    for status in op.other_statuses:
        responses.update(oa.responses(status, op.answer_schema))
    doc["responses"] = {str(k): v for k, v in sorted(responses.items(), key=lambda kv: str(kv[0]))}
    return doc


def document(operations: Sequence[Operation]) -> dict[str, Any]:
    """The OpenAPI 3.1 document of ``operations``."""
    paths: dict[str, dict[str, Any]] = {}
    for op in operations:
        paths.setdefault(op.route.template, {})[op.route.method.lower()] = _operation(op)
    return {
        "openapi": "3.1.0",
        "info": {"title": TITLE, "description": DESCRIPTION, "version": VERSION},
        "paths": paths,
    }
