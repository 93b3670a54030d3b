"""Every request shape of the fake, declared once: reading a body and its JSON Schema both
derive from the declaration, so the rules the fake enforces and the schemas it documents
(``service.schemas``, the OpenAPI document, MCP input schemas) cannot drift apart.

A shape is an object of fields; a field names its wire key and its limits. ``read`` runs
the rules through ``domain._validate.Reader`` (one issue per broken rule, every issue
before failing, paths and messages as zod gives them); ``json_schema`` writes them down.

What a JSON Schema cannot say, and so the schemas leave out (the reader still refuses it):
a string's limit in UTF-8 bytes (``Text.max_bytes``), a JSON object's limit as canonical
JSON (``JsonObject.max_bytes``), NUL characters (``wire.FORBIDDEN_TEXT_CHARS``) and a
value repeated across a batch (``Items.unique``). A schema is wider there, never narrower.

For an MCP tool's input schema: ``json_schema(for_mcp=True)`` (or ``properties`` to
compose one from several shapes, ``with_fields`` to change a field, e.g. make one
required) drops the ``null`` alternative of nullable fields, which a model has no use for.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, replace
from typing import Any

from adapter import wire
from fake_contextq import _msgs
from fake_contextq.domain import _validate

Schema = dict[str, Any]
Path = tuple[str | int, ...]

__all__ = [
    "BOOT",
    "BULK_UPSERT",
    "CHECKPOINT",
    "CONTEXT_CREATE",
    "CONTEXT_UPDATE",
    "DREAM",
    "EVOLVE",
    "HANDOFF",
    "IMPORT",
    "INGEST",
    "LESSON",
    "LINK",
    "LIST_QUERY",
    "REGENERATE_MOCS",
    "SAVED_SEARCH_CREATE",
    "SAVED_SEARCH_UPDATE",
    "SEARCH",
    "SESSION_END",
    "SESSION_START",
    "TASK",
    "TICK",
    "WORKSPACE_CREATE",
    "Choice",
    "Field",
    "Integer",
    "Items",
    "JsonObject",
    "Shape",
    "Strings",
    "Text",
    "Values",
]


class Values(dict[str, Any]):
    """What a shape read: each field's value by its wire name (its default when the body
    left it out or gave null), and ``given``, the names the body held at all (an update
    changes those fields only)."""

    def __init__(self, values: Mapping[str, Any], given: frozenset[str]) -> None:
        super().__init__(values)
        self.given = given


@dataclass(frozen=True, kw_only=True)
class Field:
    """One key of an object: its wire name, whether it must be there, what a model is told
    of it. Subclasses say how it is read and how its JSON Schema reads."""

    name: str
    required: bool = False
    description: str = ""

    def read(self, reader: _validate.Reader) -> Any:
        raise NotImplementedError

    def read_query(self, reader: _validate.Reader) -> Any:
        """The field read from a query string, where every value is text."""
        return self.read(reader)

    def default(self) -> Any:
        """The value of a field the body left out (or gave null, where null is allowed)."""
        return None

    def takes_null(self) -> bool:
        """Whether ``null`` reads as not given (else it is the wrong type)."""
        return False

    def value_schema(self) -> Schema:
        raise NotImplementedError

    def json_schema(self, for_mcp: bool = False) -> Schema:
        """The field's JSON Schema: ``null`` allowed where the field is nullable (not for
        MCP), its default and description where it has them."""
        schema = self.value_schema()
        if self.takes_null() and not for_mcp:
            schema = {"anyOf": [schema, {"type": "null"}]}
        default = self.default()
        if default is not None:
            schema["default"] = list(default) if isinstance(default, tuple) else default
        if self.description:
            schema["description"] = self.description
        return schema


@dataclass(frozen=True, kw_only=True)
class Text(Field):
    """A string: ``min_len``..``max_len`` characters, at most ``max_bytes`` of UTF-8, no
    NUL; one with a ``pattern`` matches it in full or is told ``pattern_message``."""

    nullable: bool = False
    min_len: int = 0
    max_len: int | None = None
    max_bytes: int | None = None
    pattern: re.Pattern[str] | None = None
    pattern_message: str = ""

    def takes_null(self) -> bool:
        return self.nullable

    def read(self, reader: _validate.Reader) -> str | None:
        return reader.string(
            self.name,
            required=self.required,
            nullable=self.nullable,
            min_len=self.min_len,
            max_len=self.max_len,
            max_bytes=self.max_bytes,
            pattern=self.pattern,
            pattern_message=self.pattern_message,
        )

    def value_schema(self) -> Schema:
        schema: Schema = {"type": "string"}
        if self.min_len:
            schema["minLength"] = self.min_len
        if self.max_len is not None:
            schema["maxLength"] = self.max_len
        if self.pattern is not None:
            schema["pattern"] = f"^(?:{self.pattern.pattern})$"
        return schema


@dataclass(frozen=True, kw_only=True)
class Choice(Field):
    """One string of ``options`` (``nullable``: or null, read as not given)."""

    options: tuple[str, ...]
    nullable: bool = False

    def takes_null(self) -> bool:
        return self.nullable

    def read(self, reader: _validate.Reader) -> str | None:
        if self.nullable and reader.has(self.name) and reader.obj[self.name] is None:
            return None
        return reader.enum(self.name, self.options, required=self.required)

    def value_schema(self) -> Schema:
        return {"type": "string", "enum": list(self.options)}


@dataclass(frozen=True, kw_only=True)
class Strings(Field):
    """A list of at most ``max_items`` strings, each ``min_item_len``..``max_item_len``
    characters; ``or_empty``: a body without it reads as ``()``, not ``None``."""

    max_items: int
    min_item_len: int = 1
    max_item_len: int
    or_empty: bool = False

    def read(self, reader: _validate.Reader) -> tuple[str, ...] | None:
        return reader.string_list(
            self.name,
            max_items=self.max_items,
            min_item_len=self.min_item_len,
            max_item_len=self.max_item_len,
        )

    def default(self) -> tuple[str, ...] | None:
        return () if self.or_empty else None

    def value_schema(self) -> Schema:
        item: Schema = {"type": "string", "maxLength": self.max_item_len}
        if self.min_item_len:
            item["minLength"] = self.min_item_len
        return {"type": "array", "maxItems": self.max_items, "items": item}


@dataclass(frozen=True, kw_only=True)
class JsonObject(Field):
    """Free JSON, an object: no NUL in any key or string, at most ``max_bytes`` as
    canonical JSON; ``or_empty``: a body without it (or with null) reads as ``{}``."""

    nullable: bool = False
    max_bytes: int | None = None
    or_empty: bool = False

    def takes_null(self) -> bool:
        return self.nullable

    def read(self, reader: _validate.Reader) -> dict[str, Any] | None:
        return reader.mapping(
            self.name, required=self.required, nullable=self.nullable, max_bytes=self.max_bytes
        )

    def default(self) -> dict[str, Any] | None:
        return {} if self.or_empty else None

    def value_schema(self) -> Schema:
        return {"type": "object"}


@dataclass(frozen=True, kw_only=True)
class Integer(Field):
    """An integer in ``minimum``..``maximum`` (a JSON number with no fraction, ``1.0``,
    counts as one), ``or_else`` when not given."""

    minimum: int
    maximum: int
    or_else: int | None = None
    nullable: bool = False

    def takes_null(self) -> bool:
        return self.nullable

    def read(self, reader: _validate.Reader) -> int | None:
        if self.nullable and reader.has(self.name) and reader.obj[self.name] is None:
            return None
        return reader.integer(
            self.name, required=self.required, minimum=self.minimum, maximum=self.maximum
        )

    def read_query(self, reader: _validate.Reader) -> int | None:
        return reader.query_integer(self.name, minimum=self.minimum, maximum=self.maximum)

    def default(self) -> int | None:
        return self.or_else

    def value_schema(self) -> Schema:
        return {"type": "integer", "minimum": self.minimum, "maximum": self.maximum}


@dataclass(frozen=True, kw_only=True)
class Items(Field):
    """An array of ``min_items``..``max_items`` objects of ``shape``; no two with the same
    value of the field ``unique`` (the later one is told ``unique_message``)."""

    shape: Shape
    min_items: int = 0
    max_items: int
    unique: str | None = None
    unique_message: str = ""

    def read(self, reader: _validate.Reader) -> list[Values] | None:
        present, value = reader.get(self.name, self.required)
        if not present:
            return None
        path: Path = (*reader.base, self.name)
        if not isinstance(value, list):
            reader.expect(self.name, "array", value)
        elif len(value) < self.min_items:
            reader.issues.add(path, _msgs.TOO_FEW_ITEMS.format(min=self.min_items))
        elif len(value) > self.max_items:
            reader.issues.add(path, _msgs.TOO_MANY_ITEMS.format(max=self.max_items))
        else:
            return self._read_items(reader.issues, path, value)
        return None

    def _read_items(self, issues: _validate.Issues, path: Path, value: list[Any]) -> list[Values]:
        items: list[Values] = []
        seen: set[Any] = set()
        for i, item in enumerate(value):
            read = self.shape.read_object(_validate.Reader(item, issues, (*path, i)))
            if self.unique is not None and (key := read[self.unique]) is not None:
                if key in seen:
                    issues.add((*path, i, self.unique), self.unique_message.format(value=key))
                seen.add(key)
            items.append(read)
        return items

    def value_schema(self) -> Schema:
        return self.json_schema()

    def json_schema(self, for_mcp: bool = False) -> Schema:
        schema: Schema = {"type": "array"}
        if self.min_items:
            schema["minItems"] = self.min_items
        schema["maxItems"] = self.max_items
        schema["items"] = self.shape.json_schema(for_mcp)
        if self.description:
            schema["description"] = self.description
        return schema


class Shape:
    """A JSON object of ``fields``, read in their order (the order of the issues).

    ``optional_body``: an empty body reads as ``{}`` (a tick or a handoff may send none).
    """

    def __init__(self, *fields: Field, optional_body: bool = False) -> None:
        names = [f.name for f in fields]
        if len(set(names)) != len(names):
            raise ValueError(f"a field named twice in {names}")
        self.fields = fields
        self.optional_body = optional_body
        self._names = frozenset(names)

    def __repr__(self) -> str:
        return f"Shape({', '.join(f.name for f in self.fields)})"

    def __iter__(self) -> Iterator[Field]:
        return iter(self.fields)

    def field(self, name: str) -> Field:
        return next(f for f in self.fields if f.name == name)

    @property
    def required(self) -> list[str]:
        return [f.name for f in self.fields if f.required]

    def read(self, raw: bytes | Mapping[str, Any]) -> Values:
        """A request body (raw bytes, or the mapping the in-process API gave) read into
        values, or ``errors.ValidationFailed`` holding every issue."""
        issues = _validate.Issues()
        obj = {} if self.optional_body and not raw else _validate.body_json(raw)
        values = self.read_object(_validate.Reader(obj, issues))
        issues.check()
        return values

    def read_query(self, params: Mapping[str, str]) -> Values:
        """A query string's parameters read into values (a lone surrogate read as U+FFFD,
        integers from their digits), or ``errors.ValidationFailed`` with every issue."""
        issues = _validate.Issues(_msgs.INVALID_QUERY)
        texts = {name: wire.well_formed(value) for name, value in params.items()}
        reader = _validate.Reader(texts, issues)
        values = self._values(reader, query=True)
        issues.check()
        return values

    def read_object(self, reader: _validate.Reader) -> Values:
        """The fields read from the object ``reader`` holds, issues added to its list."""
        return self._values(reader, query=False)

    def _values(self, reader: _validate.Reader, *, query: bool) -> Values:
        values: dict[str, Any] = {}
        for f in self.fields:
            value = f.read_query(reader) if query else f.read(reader)
            values[f.name] = f.default() if value is None else value
        return Values(values, frozenset(reader.obj.keys() & self._names))

    def properties(self, for_mcp: bool = False) -> dict[str, Schema]:
        """Each field's JSON Schema by name, to compose a schema from (an MCP tool's
        arguments are a path id and a body's fields, say)."""
        return {f.name: f.json_schema(for_mcp) for f in self.fields}

    def json_schema(self, for_mcp: bool = False) -> Schema:
        """The object's JSON Schema. Other keys are allowed (the reader ignores them)."""
        schema: Schema = {"type": "object"}
        if self.required:
            schema["required"] = self.required
        schema["properties"] = self.properties(for_mcp)
        return schema

    def with_fields(self, *fields: Field) -> Shape:
        """This shape with some fields swapped for others of the same name."""
        by_name = {f.name: f for f in fields}
        unknown = set(by_name) - {f.name for f in self.fields}
        if unknown:
            raise KeyError(f"no fields {sorted(unknown)} in {self!r}")
        return Shape(
            *(by_name.get(f.name, f) for f in self.fields), optional_body=self.optional_body
        )


def _required(field: Field) -> Field:
    return replace(field, required=True)


# ----- the shared fields -----

WORKSPACE = Text(
    name="workspace",
    nullable=True,
    min_len=1,
    max_len=wire.MAX_WORKSPACE_SLUG_CHARS,
    description="workspace slug",
)
TAGS = Strings(name="tags", max_items=wire.MAX_TAGS, max_item_len=wire.MAX_TAG_CHARS)
SESSION_ID = Integer(name="session_id", minimum=1, maximum=wire.MAX_ID)
TEXT = Text(name="text", nullable=True, max_len=wire.MAX_TEXT_CHARS)  # summaries, evidence


def _context(*, create: bool, external_id_required: bool) -> Shape:
    """[assumed] the fields and limits of a context body (camelCase on the wire)."""
    return Shape(
        Choice(name="type", options=wire.CONTEXT_TYPES, required=create),
        Text(name="title", required=create, min_len=1, max_len=wire.MAX_TITLE_CHARS),
        Text(name="content", required=create, max_bytes=wire.MAX_CONTENT_BYTES),
        TAGS,
        Text(
            name="externalId",
            required=external_id_required,
            nullable=not external_id_required,
            min_len=1,
            max_len=wire.MAX_EXTERNAL_ID_CHARS,
            description="unique per tenant",
        ),
        WORKSPACE,
        JsonObject(name="metadata", nullable=True),
    )


# ----- the shapes: [assumed] unless a field says otherwise -----

CONTEXT_CREATE = _context(create=True, external_id_required=False)
CONTEXT_UPDATE = _context(create=False, external_id_required=False)


def _batch(*, external_id_required: bool, max_items: int) -> Shape:
    """``{"contexts": [...]}`` of create bodies, no ``externalId`` twice."""
    return Shape(
        Items(
            name="contexts",
            required=True,
            shape=_context(create=True, external_id_required=external_id_required),
            min_items=1,
            max_items=max_items,
            unique="externalId",
            unique_message=_msgs.DUPLICATE_IN_BATCH,
        )
    )


#: A bulk upsert's batch: each create body with an ``externalId`` of its own.
BULK_UPSERT = _batch(external_id_required=True, max_items=wire.BULK_MAX_ITEMS)
#: ``ctx_import``'s batch: create bodies whose ``externalId`` is optional (one given
#: updates that context, as in a bulk upsert; none given creates one).
IMPORT = _batch(external_id_required=False, max_items=wire.IMPORT_MAX_ITEMS)
#: A saved search: a name and the fields of a search body, each filter nullable (on an
#: update, null drops it); a create needs the name and the query.
SAVED_SEARCH_UPDATE = Shape(
    Text(name="name", min_len=1, max_len=wire.MAX_SAVED_SEARCH_NAME_CHARS),
    Text(name="query", min_len=1, max_len=wire.MAX_QUERY_CHARS),
    Choice(name="type", options=wire.SEARCH_TYPES, nullable=True),
    Text(name="workspace", nullable=True, min_len=1, max_len=wire.MAX_WORKSPACE_SLUG_CHARS),
    Strings(name="tags", max_items=wire.MAX_TAGS, max_item_len=wire.MAX_TAG_CHARS),
    Integer(name="limit", minimum=1, maximum=wire.SEARCH_MAX_LIMIT, nullable=True),
)
SAVED_SEARCH_CREATE = SAVED_SEARCH_UPDATE.with_fields(
    _required(SAVED_SEARCH_UPDATE.field("name")), _required(SAVED_SEARCH_UPDATE.field("query"))
)
#: [seed] ``workspace`` and ``tag`` filters; the rest [assumed]. Read by ``read_query``.
LIST_QUERY = Shape(
    Choice(name="type", options=wire.CONTEXT_TYPES),
    Text(name="workspace"),
    Text(name="tag"),
    Integer(name="limit", minimum=1, maximum=wire.LIST_MAX_LIMIT, or_else=wire.LIST_DEFAULT_LIMIT),
    Integer(name="offset", minimum=0, maximum=2**31 - 1, or_else=0),
)
#: [seed] the 6-type enum on ``type``; [public] ``limit`` defaults to 10.
SEARCH = Shape(
    Text(name="query", required=True, min_len=1, max_len=wire.MAX_QUERY_CHARS),
    Choice(name="type", options=wire.SEARCH_TYPES),
    WORKSPACE,
    replace(TAGS, or_empty=True),
    Integer(
        name="limit", minimum=1, maximum=wire.SEARCH_MAX_LIMIT, or_else=wire.SEARCH_DEFAULT_LIMIT
    ),
)
#: ``{"slug", "name"?}``; the caller names the workspace by its slug when no name is given.
WORKSPACE_CREATE = Shape(
    Text(
        name="slug",
        required=True,
        min_len=1,
        max_len=wire.MAX_WORKSPACE_SLUG_CHARS,
        pattern=wire.WORKSPACE_SLUG_RE,
        pattern_message=_msgs.BAD_SLUG.format(max=wire.MAX_WORKSPACE_SLUG_CHARS),
    ),
    Text(name="name", nullable=True, min_len=1, max_len=wire.MAX_WORKSPACE_NAME_CHARS),
)

# ----- Agent Memory Layer -----

SESSION_START = Shape(
    WORKSPACE,
    replace(SESSION_ID, name="parent_session_id"),
    JsonObject(name="metadata", nullable=True, max_bytes=wire.MAX_METADATA_BYTES, or_empty=True),
)
SESSION_END = Shape(
    Choice(name="status", options=wire.SESSION_END_STATUSES, required=True),
    replace(TEXT, name="summary"),
)
CHECKPOINT = Shape(
    Integer(name="seq", required=True, minimum=1, maximum=2**31 - 1),
    JsonObject(name="state", required=True, max_bytes=wire.MAX_STATE_BYTES),
    replace(TEXT, name="summary"),
)
#: ``status`` not given: pending when the task is new, else unchanged.
TASK = Shape(
    _required(SESSION_ID),
    Text(name="key", required=True, min_len=1, max_len=wire.MAX_TASK_KEY_CHARS),
    Text(name="title", required=True, min_len=1, max_len=wire.MAX_TITLE_CHARS),
    Choice(name="status", options=wire.TASK_STATUSES),
    Text(name="parent_key", nullable=True, min_len=1, max_len=wire.MAX_TASK_KEY_CHARS),
    replace(TEXT, name="evidence"),
)
#: A missing or blank ``evidence`` is left to the route's 422, not refused here.
TICK = Shape(replace(TEXT, name="evidence"), optional_body=True)
LESSON = Shape(
    Text(name="text", required=True, min_len=1, max_len=wire.MAX_TEXT_CHARS),
    WORKSPACE,
    SESSION_ID,
    replace(TAGS, or_empty=True),
)
HANDOFF = Shape(SESSION_ID, WORKSPACE, optional_body=True)
#: [seed] ``goal``, ``workspace``, ``token_budget``; [assumed] their limits and default.
BOOT = Shape(
    Text(name="goal", required=True, min_len=1, max_len=wire.MAX_GOAL_CHARS),
    WORKSPACE,
    Integer(
        name="token_budget",
        minimum=1,
        maximum=wire.MAX_TOKEN_BUDGET,
        or_else=wire.DEFAULT_TOKEN_BUDGET,
    ),
)

# ----- the LLM-written PKM operations: every field and limit [assumed]; no body is {} -----

DREAM = Shape(
    WORKSPACE,
    Text(name="since", nullable=True, min_len=1, max_len=wire.MAX_SINCE_CHARS),
    Integer(
        name="limit", minimum=1, maximum=wire.DREAM_MAX_SOURCES, or_else=wire.DREAM_DEFAULT_SOURCES
    ),
    optional_body=True,
)
EVOLVE = Shape(
    replace(TEXT, name="instruction"),
    Integer(
        name="limit",
        minimum=1,
        maximum=wire.EVOLVE_MAX_SOURCES,
        or_else=wire.EVOLVE_DEFAULT_SOURCES,
    ),
    optional_body=True,
)
REGENERATE_MOCS = Shape(WORKSPACE, optional_body=True)

# ----- links and ingest: every field and limit [assumed] -----

LINK = Shape(
    Integer(name="targetId", required=True, minimum=1, maximum=wire.MAX_ID),
    Text(
        name="relation",
        min_len=1,
        max_len=wire.LINK_RELATION_MAX_CHARS,
        pattern=wire.LINK_RELATION_RE,
        pattern_message=_msgs.BAD_RELATION.format(max=wire.LINK_RELATION_MAX_CHARS),
    ),
)
#: exactly one of ``text`` and ``url`` (checked after: a schema says it with ``oneOf``)
INGEST = Shape(
    Text(name="text", max_bytes=wire.INGEST_MAX_TEXT_BYTES),
    Text(name="url", min_len=1, max_len=wire.INGEST_MAX_URL_CHARS),
    Text(name="title", nullable=True, min_len=1, max_len=wire.MAX_TITLE_CHARS),
    Choice(name="type", options=wire.CONTEXT_TYPES),
    TAGS,
    WORKSPACE,
)
