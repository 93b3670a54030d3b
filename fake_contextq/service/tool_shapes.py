"""How an operation is exposed as an MCP tool: the tool's name, what the server tells a
model about it, its input schema and that schema's provenance.

[public] ContextQ's MCP server names the Core CRUD tools and ``ctx_stats``, and documents
the parameters of ``ctx_save``, ``ctx_search`` and ``ctx_list``; [seed] the 9-type enum on
save, the 6-type enum on search, the agent tools (seed 003: ``mcp/src/tools.ts``, each tool
one REST call); [assumed] every other parameter and shape, and the names: camelCase
(``wire.MCP_PARAM_NAMES``), the agent tools' former snake_case ones aliases for a release.
The tools themselves are declared on their operations (``operations.OPERATIONS``);
``operations.MCP_TOOLS`` lists them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from adapter import wire

__all__ = [
    "MCP_ALIASES_UNTIL",
    "MCP_SAVE_DEFAULT_TYPE",
    "MCP_TOOLS_NOT_FAKED",
    "Exposure",
    "McpTool",
    "mcp_save_title",
]


@dataclass(frozen=True, slots=True)
class Exposure:
    """An operation as one MCP tool (an operation may be several: ``ctx_list`` and
    ``ctx_stats`` both list contexts). ``destructive``: the tool deletes what it names."""

    name: str
    description: str
    input_schema: Mapping[str, Any]
    provenance: str  # "public", "seed" or "assumed": the tool's parameters, as documented
    destructive: bool = False
    #: the JSON Schema of its ``structuredContent``; None: the operation's answer schema
    output_schema: Mapping[str, Any] | None = None


@dataclass(frozen=True, slots=True)
class McpTool:
    """One MCP tool of the server: its exposure and the REST route it maps onto (and so
    the scope it needs)."""

    name: str
    route: wire.Route
    description: str
    input_schema: Mapping[str, Any]
    provenance: str
    destructive: bool = False
    output_schema: Mapping[str, Any] = field(default_factory=lambda: ANY_OBJECT)
    #: former name -> parameter, for the parameters renamed to camelCase
    #: (``wire.MCP_PARAM_NAMES``): accepted until ``MCP_ALIASES_UNTIL``, never listed
    aliases: Mapping[str, str] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        names = self.input_schema.get("properties", {})
        found = {old: new for old, new in wire.MCP_PARAM_NAMES.items() if new in names}
        object.__setattr__(self, "aliases", found)  # computed once, read on every call

    @classmethod
    def of(
        cls, exposure: Exposure, route: wire.Route, answer: Mapping[str, Any] | None = None
    ) -> McpTool:
        """The tool ``exposure`` declares, on ``route``, whose REST ``answer`` schema is
        its output schema unless the exposure shapes its result itself."""
        output = exposure.output_schema or answer or ANY_OBJECT
        return cls(
            exposure.name,
            route,
            exposure.description,
            exposure.input_schema,
            exposure.provenance,
            exposure.destructive,
            output,
        )

    @property
    def scope(self) -> str:
        return self.route.scope

    @property
    def required(self) -> tuple[str, ...]:
        return tuple(self.input_schema.get("required", ()))


def schema(properties: Mapping[str, Any], required: Sequence[str] = ()) -> dict[str, Any]:
    """An input schema: an object of ``properties``, ``required`` named."""
    out: dict[str, Any] = {"type": "object", "properties": dict(properties)}
    if required:
        out["required"] = list(required)
    return out


#: An output schema that says only what MCP requires (``structuredContent`` is an object).
ANY_OBJECT: Final[Mapping[str, Any]] = {"type": "object"}
#: [assumed] The largest id the MCP schemas take: Number.MAX_SAFE_INTEGER, the largest
#: integer a JavaScript client (and ContextQ's TypeScript server, ``z.number().int()``)
#: holds exactly; REST takes ids up to ``wire.MAX_ID`` (2^63 - 1).
MCP_MAX_ID: Final = 2**53 - 1

STR: Final = {"type": "string"}
TAGS: Final = {"type": "array", "items": {"type": "string"}, "maxItems": wire.MAX_TAGS}
META: Final = {"type": "object"}
ID: Final = {"type": "integer", "minimum": 1, "maximum": MCP_MAX_ID}
WORKSPACE: Final = {"type": "string", "description": "workspace slug"}
CONTEXT_FIELDS: Final = {
    "type": {"type": "string", "enum": list(wire.CONTEXT_TYPES)},  # [seed] the 9 types
    "title": STR,
    "content": STR,
    "tags": TAGS,
    "metadata": META,
    "workspace": WORKSPACE,
    "externalId": {"type": "string", "description": "unique per tenant"},
}

# [assumed] Parameter names are camelCase (``wire.MCP_PARAM_NAMES``). The agent tools' were
# their REST fields' snake_case names before; each former name is still accepted, as an
# alias of its parameter, until this version of the fake: not in any input schema (a model
# or a client reading the schema learns one name), and an alias given with its parameter is
# an input validation error naming the one to use.
MCP_ALIASES_UNTIL: Final = "0.2"
SESSION_ID: Final = wire.MCP_PARAM_NAMES["session_id"]
PARENT_SESSION_ID: Final = wire.MCP_PARAM_NAMES["parent_session_id"]
PARENT_KEY: Final = wire.MCP_PARAM_NAMES["parent_key"]
TASK_ID: Final = wire.MCP_PARAM_NAMES["task_id"]
TOKEN_BUDGET: Final = wire.MCP_PARAM_NAMES["token_budget"]

# [public] tools the real server has that this project does not model: a fake advertises
# none of them, and the docs (docs/how-to/mcp.md) list them as not faked.
MCP_TOOLS_NOT_FAKED: Final = ("ctx_event*",)

# [assumed] ctx_save needs only content (public); REST needs a type and a title, so the
# server fills them: this type, and the content's first non-blank line cut to this length.
MCP_SAVE_DEFAULT_TYPE: Final = "reference"
MCP_SAVE_TITLE_CHARS: Final = 80
MCP_UNTITLED: Final = "Untitled"


def mcp_save_title(content: str) -> str:
    """[assumed] The title ``ctx_save`` gives a context when the caller names none."""
    for line in content.splitlines():
        if line.strip():
            return line.strip()[:MCP_SAVE_TITLE_CHARS]
    return MCP_UNTITLED


# ----- the tools, each attached to its operation in ``operations.OPERATIONS`` -----

CTX_SAVE: Final = Exposure(
    "ctx_save",
    "Save a context (a note, a decision, a fact) to the shared context database.",
    schema(CONTEXT_FIELDS, ["content"]),
    "public",
)

CTX_LIST: Final = Exposure(
    "ctx_list",
    "List saved contexts, oldest first, filtered by tags, type or workspace.",
    schema(
        {
            "tags": TAGS,  # [public] a tags filter; [assumed] every tag must be carried
            "type": {"type": "string", "enum": list(wire.CONTEXT_TYPES)},
            "workspace": WORKSPACE,
            "limit": {
                "type": "integer",
                "minimum": 1,
                "maximum": wire.LIST_MAX_LIMIT,
                "default": wire.LIST_DEFAULT_LIMIT,
            },
            "offset": {"type": "integer", "minimum": 0, "default": 0},
        }
    ),
    "public",
)

CTX_STATS: Final = Exposure(
    "ctx_stats",
    "Count saved contexts, in all and by type.",
    schema({"workspace": WORKSPACE}),
    "assumed",
    output_schema={  # [assumed] the shape of ctx_stats: a count per context type
        "type": "object",
        "required": ["total", "byType"],
        "properties": {
            "total": {"type": "integer", "minimum": 0},
            "byType": {
                "type": "object",
                "required": list(wire.CONTEXT_TYPES),
                "properties": {t: {"type": "integer", "minimum": 0} for t in wire.CONTEXT_TYPES},
                "additionalProperties": False,
            },
        },
    },
)

CTX_BULK_UPDATE: Final = Exposure(
    "ctx_bulk_update",
    "Create or update many contexts at once; an item with a known externalId updates it.",
    schema(
        {
            "contexts": {
                "type": "array",
                "items": schema(CONTEXT_FIELDS, wire.CONTEXT_REQUIRED_ON_CREATE),
                "minItems": 1,
                "maxItems": wire.BULK_MAX_ITEMS,
            }
        },
        ["contexts"],
    ),
    "assumed",
)

CTX_GET: Final = Exposure(
    "ctx_get",
    "Read one context by its id, or by its external id.",
    # [assumed] exactly one of the two, as a TypeScript server's Zod refine would check it;
    # said in the schema as the required names of each choice (clients read it; a client
    # that does not still gets the refine's error)
    {
        **schema({"id": ID, "externalId": STR}),
        "oneOf": [{"required": ["id"]}, {"required": ["externalId"]}],
    },
    "assumed",
)

CTX_UPDATE: Final = Exposure(
    "ctx_update",
    "Change fields of a context; fields not given keep their value.",
    schema({"id": ID, **CONTEXT_FIELDS}, ["id"]),
    "assumed",
)

CTX_DELETE: Final = Exposure(
    "ctx_delete",
    "Delete a context by its id.",
    schema({"id": ID}, ["id"]),
    "assumed",
    destructive=True,
    # [assumed] REST answers 204 with no body; the tool says what it deleted
    output_schema={
        "type": "object",
        "required": ["deleted", "id"],
        "properties": {"deleted": {"type": "boolean", "const": True}, "id": ID},
    },
)

CTX_SEARCH: Final = Exposure(
    "ctx_search",
    "Search saved contexts by meaning and keywords, best match first.",
    schema(
        {
            "query": STR,
            "tags": TAGS,
            "limit": {
                "type": "integer",
                "minimum": 1,
                "maximum": wire.SEARCH_MAX_LIMIT,
                "default": wire.SEARCH_DEFAULT_LIMIT,  # [public] default 10
            },
            "type": {
                "type": "string",
                "enum": list(wire.SEARCH_TYPES),
            },  # [seed] only 6
            "workspace": WORKSPACE,
        },
        ["query"],
    ),
    "public",
)

AGENT_SESSION_START: Final = Exposure(
    "agent_session_start",
    "Open an agent session (one run); the workspace must exist.",
    schema({"workspace": WORKSPACE, PARENT_SESSION_ID: ID, "metadata": META}),
    "seed",
)

AGENT_SESSION_END: Final = Exposure(
    "agent_session_end",
    "Close an agent session with its outcome.",
    schema(
        {
            SESSION_ID: ID,
            "status": {"type": "string", "enum": list(wire.SESSION_END_STATUSES)},
            "summary": STR,
        },
        [SESSION_ID, "status"],
    ),
    "seed",
)

AGENT_CHECKPOINT: Final = Exposure(
    "agent_checkpoint",
    "Save a session's state; seq must be one more than the last checkpoint's.",
    schema(
        {
            SESSION_ID: ID,
            "seq": {"type": "integer", "minimum": 1},
            "state": META,
            "summary": STR,
        },
        [SESSION_ID, "seq", "state"],
    ),
    "seed",
)

AGENT_RESUME: Final = Exposure(
    "agent_resume",
    "The latest checkpoint of a session and its open tasks, to resume after a crash.",
    schema({SESSION_ID: ID}, [SESSION_ID]),
    "seed",
)

AGENT_TASK_UPSERT: Final = Exposure(
    "agent_task_upsert",
    "Create a task of a session, or update the one with the same key.",
    schema(
        {
            SESSION_ID: ID,
            "key": STR,
            "title": STR,
            "status": {"type": "string", "enum": list(wire.TASK_STATUSES)},
            PARENT_KEY: STR,
            "evidence": STR,
        },
        [SESSION_ID, "key", "title"],
    ),
    "seed",
)

AGENT_TASK_TICK: Final = Exposure(
    "agent_task_tick",
    "Mark a task verified; evidence is required.",
    schema({TASK_ID: ID, "evidence": STR}, [TASK_ID, "evidence"]),
    "seed",
)

AGENT_LESSON_ADD: Final = Exposure(
    "agent_lesson_add",
    "Record a lesson learnt, recalled by later runs' boot.",
    schema(
        {
            "text": STR,
            "workspace": WORKSPACE,
            SESSION_ID: ID,
            "tags": TAGS,
        },
        ["text"],
    ),
    "seed",
)

AGENT_HANDOFF: Final = Exposure(
    "agent_handoff",
    "Write the handoff of a session for the next run (needs the server's LLM).",
    schema({SESSION_ID: ID, "workspace": WORKSPACE}),
    "seed",
)

AGENT_BOOT: Final = Exposure(
    "agent_boot",
    "Start a run with memory: the last session to resume, its handoff, lessons and facts.",
    schema(
        {
            "goal": STR,
            "workspace": WORKSPACE,
            TOKEN_BUDGET: {
                "type": "integer",
                "minimum": 1,
                "maximum": wire.MAX_TOKEN_BUDGET,
            },
        },
        ["goal"],
    ),
    "seed",
)


# ----- Bulk, PKM and saved searches: the public page names them; [assumed] every parameter.
# Each tool's output schema is its operation's answer schema unless it says otherwise.

CTX_IMPORT: Final = Exposure(
    "ctx_import",
    "Import many contexts in one call (all or none); each needs only content, as ctx_save. "
    "An item whose externalId is known updates that context; any other is created.",
    schema(
        {
            "contexts": {
                "type": "array",
                "items": schema(CONTEXT_FIELDS, ["content"]),
                "minItems": 1,
                "maxItems": wire.IMPORT_MAX_ITEMS,
            }
        },
        ["contexts"],
    ),
    "assumed",
    # [assumed] the counts and the id each item landed as, in the order sent: not the
    # contexts. A tool answers a model, which has just sent every content and would pay to
    # read them all again; ctx_get reads one back. (The REST import answers the contexts;
    # ctx_bulk_update answers as its REST twin, the shape it has always had.)
    output_schema={
        "type": "object",
        "required": ["created", "updated", "ids"],
        "properties": {
            "created": {"type": "integer", "minimum": 0},
            "updated": {"type": "integer", "minimum": 0},
            "ids": {"type": "array", "items": {"type": "integer"}},
        },
    },
)

CTX_CHUNKS: Final = Exposure(
    "ctx_chunks",
    "The chunks a context's content is split into for embedding, in order.",
    schema({"id": ID}, ["id"]),
    "assumed",
)

CTX_MOCS: Final = Exposure(
    "ctx_mocs",
    "List map-of-content contexts (types moc and map), oldest first, as ctx_list pages.",
    schema(
        {
            "workspace": WORKSPACE,
            "tag": STR,
            "limit": CTX_LIST.input_schema["properties"]["limit"],
            "offset": CTX_LIST.input_schema["properties"]["offset"],
        }
    ),
    "assumed",
)

# ----- links and ingest: [assumed] every parameter (the public page names the tools only) -----

CTX_LINK: Final = Exposure(
    "ctx_link",
    "Link a context to another of yours with a relation (default 'related'); "
    "a link is directed, from id to targetId.",
    schema(
        {
            "id": ID,
            "targetId": ID,
            "relation": {
                "type": "string",
                "description": "lowercase letters, digits, '_' and '-', e.g. supports, part_of",
                "maxLength": wire.LINK_RELATION_MAX_CHARS,
                "default": wire.LINK_DEFAULT_RELATION,
            },
        },
        ["id", "targetId"],
    ),
    "assumed",
)
#: What ``ctx_link`` answers (``structuredContent``): the new link.

CTX_LINKS: Final = Exposure(
    "ctx_links",
    "The links of a context, both directions: outgoing (it links to) and incoming "
    "(linked to it), each with the other context's summary.",
    schema({"id": ID}, ["id"]),
    "assumed",
)
#: What ``ctx_links`` answers: the context's summary, its outgoing and incoming links.

CTX_INGEST: Final = Exposure(
    "ctx_ingest",
    "Ingest markdown text (or a data: URL of text/plain or text/markdown) as contexts, one "
    "per top-level heading, as a job: poll ctx_ingest_status with its id.",
    schema(
        {
            "text": {"type": "string", "description": "markdown, split at each '# ' heading"},
            "url": {"type": "string", "description": "a data: URL (this fake fetches no http)"},
            "title": {"type": "string", "description": "the title of text before a heading"},
            "type": {"type": "string", "enum": list(wire.CONTEXT_TYPES)},
            "tags": TAGS,
            "workspace": WORKSPACE,
        }
    ),
    "assumed",
)

_SEARCH_TYPE: Final = {"type": "string", "enum": list(wire.SEARCH_TYPES)}
_SAVED_FIELDS: Final = {
    "name": {"type": "string", "description": "unique per tenant"},
    "query": STR,
    "type": _SEARCH_TYPE,
    "workspace": WORKSPACE,
    "tags": TAGS,
    "limit": CTX_SEARCH.input_schema["properties"]["limit"],
}
# an update may send null to drop a filter
_NULLABLE_FIELDS: Final = {
    **_SAVED_FIELDS,
    "type": {"type": ["string", "null"], "enum": [*wire.SEARCH_TYPES, None]},
    "workspace": {"type": ["string", "null"], "description": "workspace slug"},
    "limit": {"type": ["integer", "null"], "minimum": 1, "maximum": wire.SEARCH_MAX_LIMIT},
}

CTX_SAVED_SEARCHES_LIST: Final = Exposure(
    "ctx_saved_searches_list",
    "List the saved searches, oldest first.",
    schema(
        {
            "limit": CTX_LIST.input_schema["properties"]["limit"],
            "offset": CTX_LIST.input_schema["properties"]["offset"],
        }
    ),
    "assumed",
)

CTX_SAVED_SEARCHES_CREATE: Final = Exposure(
    "ctx_saved_searches_create",
    "Save a ctx_search query and its filters under a name, to run again later.",
    schema(_SAVED_FIELDS, ["name", "query"]),
    "assumed",
)

CTX_SAVED_SEARCHES_GET: Final = Exposure(
    "ctx_saved_searches_get",
    "Read one saved search by its id.",
    schema({"id": ID}, ["id"]),
    "assumed",
)

CTX_SAVED_SEARCHES_UPDATE: Final = Exposure(
    "ctx_saved_searches_update",
    "Change fields of a saved search; fields not given keep their value, null drops a filter.",
    schema({"id": ID, **_NULLABLE_FIELDS}, ["id"]),
    "assumed",
)

CTX_SAVED_SEARCHES_DELETE: Final = Exposure(
    "ctx_saved_searches_delete",
    "Delete a saved search by its id.",
    schema({"id": ID}, ["id"]),
    "assumed",
    destructive=True,
    output_schema={  # [assumed] REST answers 204, no body
        "type": "object",
        "required": ["deleted", "id"],
        "properties": {"deleted": {"type": "boolean", "const": True}, "id": ID},
    },
)

_RUN_DESCRIPTION: Final = "Run a saved search: what ctx_search answers for its query and filters."
CTX_SAVED_SEARCHES_RUN: Final = Exposure(
    "ctx_saved_searches_run", _RUN_DESCRIPTION, schema({"id": ID}, ["id"]), "assumed"
)
# [public] the page lists this name too, beside ctx_saved_searches_run: the same tool
CTX_RUN_SAVED_SEARCH: Final = Exposure(
    "ctx_run_saved_search", _RUN_DESCRIPTION, schema({"id": ID}, ["id"]), "assumed"
)

CTX_INGEST_STATUS: Final = Exposure(
    "ctx_ingest_status",
    "The state of an ingest job (queued, running, done or failed) and the contexts it made.",
    schema({"jobId": ID}, ["jobId"]),
    "assumed",
)
