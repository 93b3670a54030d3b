"""Every error code and message the fake answers with, in one place.

Codes and statuses follow the wire contract (``adapter.wire``); the
messages are this project's wording. Tests import these constants instead of
repeating strings, so a message changes in one place.
"""

from __future__ import annotations

from adapter.wire import AUTH_SCHEME, KEY_PREFIX, ErrorCode

# Error codes (the ``error`` field of every error body): the contract's, and one of the fake's.
UNAUTHORIZED = ErrorCode.UNAUTHORIZED
SCOPE_DENIED = ErrorCode.SCOPE_DENIED
NOT_FOUND = ErrorCode.NOT_FOUND
VALIDATION_ERROR = ErrorCode.VALIDATION_ERROR
EXTERNAL_ID_TAKEN = ErrorCode.EXTERNAL_ID_TAKEN
WORKSPACE_TAKEN = ErrorCode.WORKSPACE_TAKEN
SEQ_CONFLICT = ErrorCode.SEQ_CONFLICT
WORKSPACE_NOT_EMPTY = ErrorCode.WORKSPACE_NOT_EMPTY
QUOTA_EXCEEDED = ErrorCode.QUOTA_EXCEEDED
NO_WORKSPACE = ErrorCode.NO_WORKSPACE
EVIDENCE_REQUIRED = ErrorCode.EVIDENCE_REQUIRED
LLM_UNAVAILABLE = ErrorCode.LLM_UNAVAILABLE
PAYLOAD_TOO_LARGE = ErrorCode.PAYLOAD_TOO_LARGE
UNSUPPORTED_MEDIA_TYPE = ErrorCode.UNSUPPORTED_MEDIA_TYPE
INTERNAL_ERROR = ErrorCode.INTERNAL_ERROR
DATABASE_BUSY = ErrorCode.DATABASE_BUSY
SAVED_SEARCH_NAME_TAKEN = ErrorCode.SAVED_SEARCH_NAME_TAKEN
INJECTED_FAULT = "injected_fault"  # the fake's own: an answer a test injected
LINK_EXISTS = ErrorCode.LINK_EXISTS
NOT_FAKED = "not_faked"  # the fake's own: what ContextQ would do and this fake does not (501)

_KEY_SHAPE = f"{AUTH_SCHEME} {KEY_PREFIX}<40 hex>"

# 401
MISSING_AUTH = f"Missing Authorization header; send 'Authorization: {_KEY_SHAPE}'."
NOT_BEARER = f"Authorization header must use the {AUTH_SCHEME} scheme: '{_KEY_SHAPE}'."
MALFORMED_KEY = "Malformed API key: expected 'sk_live_' followed by 40 lowercase hex characters."
UNKNOWN_KEY = "Unknown API key."
REVOKED_KEY = "This API key has been revoked."
#: where an MCP client looks for OAuth (wire.is_oauth_discovery): the 404 says what to send
OAUTH_NOT_OFFERED = (
    "Route {method} {path} not found: ContextQ does not offer OAuth. "
    f"It takes an API key: send 'Authorization: {_KEY_SHAPE}'."
)
CONTROL_TOKEN_REQUIRED = (
    "Control endpoints need the control token the server printed at start "
    f"(Authorization: {AUTH_SCHEME} <control token>); API keys are not accepted here."
)
DASHBOARD_TOKEN_REQUIRED = (
    "This dashboard answers only to the control token: open the dashboard URL the server "
    "printed (it carries the token once and keeps it in a cookie for this path)."
)
DASHBOARD_TOKEN_WRONG = (
    "The token in this URL is not the server's control token: open the dashboard URL the "
    "server printed at start-up."
)

# 403
SCOPE_DENIED_MSG = "This API key lacks the '{required}' scope (it has: {held})."

# the dashboard's forms: a change not sent from the dashboard's own pages
_DASHBOARD_FORMS = (
    "The dashboard changes state only through the forms of its own pages; a script sends "
    f"'Authorization: {AUTH_SCHEME} <control token>' instead of the cookie."
)
DASHBOARD_CROSS_ORIGIN = (
    "Refused: this form was sent from {origin}, another origin than the dashboard's "
    "({expected}), so another page (perhaps on another port of this host) sent it. "
    + _DASHBOARD_FORMS
)
DASHBOARD_CROSS_SITE = (
    "Refused: the browser says this form came from another page than the dashboard's "
    "(Sec-Fetch-Site: {site}). " + _DASHBOARD_FORMS
)
DASHBOARD_NO_FORM_TOKEN = (
    "Refused: the form carried no dashboard form token (field {field!r}). Reload the "
    "dashboard page and submit its form again. " + _DASHBOARD_FORMS
)
DASHBOARD_WRONG_FORM_TOKEN = (
    "Refused: the form's dashboard form token (field {field!r}) is not this server's. "
    "Reload the dashboard page and submit its form again. " + _DASHBOARD_FORMS
)

# the served fake's root page (GET /), which must not pass for ContextQ's own answer
ROOT_NOTE = (
    "This is fake-contextq {version}, a fake of the ContextQ service for tests and local "
    "development, not ContextQ: every answer here is the fake's."
)

# the dashboard: JSON (a journaled body, metadata, a checkpoint's state) shown not indented
JSON_SHOWN_TOO_DEEP = "Not indented: this JSON nests deeper than {depth} levels."
JSON_SHOWN_TOO_LONG = "Not indented: indented, it would be longer than {chars} characters."

# 404
DASHBOARD_NO_FILE = "The dashboard has no file {name!r}."
DASHBOARD_NO_REQUEST = "Request {number} is not in the journal (cleared, or not served yet)."
CONTEXT_NOT_FOUND = "Context {id} not found."
EXTERNAL_NOT_FOUND = "No context with externalId {external_id!r}."
WORKSPACE_NOT_FOUND = "Workspace {slug!r} not found."
SAVED_SEARCH_NOT_FOUND = "Saved search {id} not found."
ROUTE_NOT_FOUND = "Route {method} {path} not found."
TENANT_NOT_FOUND = "Tenant {id} not found."
KEY_NOT_FOUND = "API key not found."

# 400
INVALID_BODY = "Invalid request body."
INVALID_QUERY = "Invalid query parameters."
INVALID_PATH = "Invalid path parameter."
MALFORMED_JSON = "Malformed JSON body: {detail}."
BODY_NOT_OBJECT = "Request body must be a JSON object."
EXPECTED = "Expected {expected}, received {received}."
REQUIRED = "Required."
TOO_SHORT = "Must be at least {min} character(s) long."
TOO_LONG = "Must be at most {max} character(s) long."
TOO_MANY_BYTES = "Must be at most {max} bytes of UTF-8 (got {got})."
TOO_MANY_ITEMS = "Must contain at most {max} item(s)."
TOO_FEW_ITEMS = "Must contain at least {min} item(s)."
INVALID_ENUM = "Invalid enum value. Expected {options}, received {received!r}."
OUT_OF_RANGE = "Must be an integer between {min} and {max}."
NOT_AN_ID = "Must be a positive integer id, got {value!r}."
NOT_UTF8 = "Percent-decoded, the path segment is not valid UTF-8."
QUERY_NOT_UTF8 = "Percent-decoded, the value is not valid UTF-8."
HAS_NUL = "Must not contain a NUL character (U+0000)."
BODY_NOT_UTF8 = "the body is not UTF-8 (UTF-16 and UTF-32 are not read)"
BAD_SLUG = (
    "Workspace slug must be 1-{max} characters of lowercase letters, digits and single "
    "hyphens, starting and ending with a letter or digit."
)
DUPLICATE_IN_BATCH = "externalId {value!r} appears more than once in this batch."
NO_SCOPES_KNOWN = "Unknown scope {scope!r}; scopes are read, write and admin."
UNKNOWN_KEY_HASH = "unknown key hash scheme {scheme!r}; one of {schemes}"
UNKNOWN_PLAN = "Unknown plan {plan!r}; plans are {plans}."
PLAN_ALIAS = (
    "plan {plan!r} is now called {name!r}, its public name; {plan!r} is accepted until "
    "fake-contextq 0.2"
)

# 409
EXTERNAL_ID_TAKEN_MSG = "externalId {external_id!r} is already used by context {id} in this tenant."
WORKSPACE_TAKEN_MSG = "Workspace {slug!r} already exists."
SAVED_SEARCH_NAME_TAKEN_MSG = "A saved search named {name!r} already exists (saved search {id})."
WORKSPACE_NOT_EMPTY_MSG = "Workspace {slug!r} still holds {count} context(s); delete them first."

# 402
QUOTA_EXCEEDED_MSG = (
    "Quota exceeded: the {plan} plan allows {limit} {resource}; this tenant has {current} "
    "and the request would add {adding}."
)

# 413 / 415
PAYLOAD_TOO_LARGE_MSG = "Request body is {size} bytes; the limit is {limit} bytes."
PAYLOAD_TOO_LARGE_STREAMED_MSG = (
    "Request body is larger than the limit of {limit} bytes (reading stopped at {read})."
)
UNSUPPORTED_MEDIA_TYPE_MSG = "Body must be sent as application/json (got {content_type!r})."

# Faults and internals
INJECTED_FAULT_MSG = "Fault injected by fake-contextq for {method} {path}."
INTERNAL_ERROR_MSG = "Internal error in fake-contextq: {detail}"

# The audit chain (raised by verify_audit_chain, not sent over HTTP)
CHAIN_FIRST_HAS_PREV = "audit row {id}: the first row of the log must have prev_hash null"
CHAIN_PREV_MISMATCH = (
    "audit row {id}: prev_hash {got} does not match the hash of row {prev_id} ({expected})"
)
CHAIN_HASH_MISMATCH = "audit row {id}: stored hash {got} does not match its contents ({expected})"
CHAIN_ID_ORDER = "audit row {id}: ids must increase along the chain (previous row is {prev_id})"

# Agent Memory Layer
SESSION_NOT_FOUND = "Agent session {id} not found."
TASK_NOT_FOUND = "Agent task {id} not found."
TASK_KEY_NOT_FOUND = "No task with key {key!r} in session {session}."
TASK_CYCLE = "This parent would make the task tree a loop (a task cannot be its own ancestor)."
SEQ_CONFLICT_MSG = (
    "Checkpoint seq {seq} is not the next one: the session expects seq {expected} "
    "(another writer may have checkpointed first)."
)
EVIDENCE_REQUIRED_MSG = "A task is verified only with evidence: send a non-blank 'evidence'."
NO_WORKSPACE_MSG = (
    "A handoff needs a workspace: neither the body nor the session carries one (an unknown "
    "workspace slug is silently dropped when a session starts)."
)
NO_WORKSPACE_FOR = (
    "{what} needs a workspace: the body names none, or one this tenant does not have "
    "(create it first)."
)
NOT_A_DATETIME = "Must be an ISO 8601 date-time such as 2025-01-31T09:00:00Z, got {value!r}."
NOTHING_TO_DREAM = (
    "Workspace {slug!r} holds no context to synthesise{since} (syntheses and maps of content "
    "are never a dream's source); nothing was written."
)
NOTHING_TO_DREAM_SINCE = " updated since {since}"
NO_WORKSPACE_TO_EVOLVE = (
    "Evolving context {id} needs a workspace: the context has none (an unknown workspace "
    "slug is stored as none); its related contexts are those of its workspace."
)
NOTHING_TO_EVOLVE = (
    "Context {id} has no newer related context (same workspace, a shared tag) to evolve "
    "from: send an instruction."
)
MOC_ID_TAKEN = (
    "externalId {external_id!r}, the map of content of tag {tag!r}, is held by context {id}, "
    "which regeneration did not write; nothing was written."
)
LLM_UNAVAILABLE_FOR = "No LLM provider is configured on this server, so no {what} can be written."
LLM_EMPTY_FOR = "The LLM provider returned no {what} text."
LLM_FAILED_FOR = "The LLM provider failed ({error}); no {what} was written."
LLM_UNUSABLE_FOR = (
    "The LLM provider returned {what} text no context can hold ({size} bytes of UTF-8, or a "
    "NUL character; at most {max} bytes); nothing was written."
)
LLM_UNAVAILABLE_MSG = LLM_UNAVAILABLE_FOR.format(what="handoff")
LLM_EMPTY_MSG = LLM_EMPTY_FOR.format(what="handoff")
LLM_FAILED_MSG = LLM_FAILED_FOR.replace("{what}", "handoff")

# 503 database_busy: a database store's lock not free in time (the ``lock`` detail names it)
DATABASE_BUSY_MSG = (
    "Gave up after {seconds:g}s waiting for {lock}, which another transaction holds; "
    "nothing was written. Retry later."
)
PG_WRITE_LOCK = (
    "the write lock of this fake (Postgres advisory lock {key} of schema {schema!r} "
    "in database {database!r})"
)
PG_TABLE_LOCK = "a row or table lock in schema {schema!r} of database {database!r}"
SQLITE_LOCK = "the write lock of the SQLite database {path!r}"
POOL_LOCK = "one of the {size} database connections of this fake, all in use"

# The MCP surface: a tool call refused before any REST call, as ContextQ's TypeScript server
# refuses it. [assumed] Seed 003 puts that server in ``mcp/src/tools.ts``, on the official
# TypeScript SDK's ``McpServer`` (read at @modelcontextprotocol/sdk v1.29.0,
# ``src/server/mcp.ts``; the same in @modelcontextprotocol/server 2.0.0): an unknown tool, a
# disabled one and arguments its Zod schema refuses all throw ``McpError(-32602, …)``, whose
# message the SDK prefixes with ``MCP error <code>: `` (``src/types.ts``), and its
# ``tools/call`` handler turns every throw into a result with ``isError: true`` and that
# message as its only text (``createToolError``: no ``structuredContent``).
MCP_ERROR_OF = "MCP error {code}: {message}"
MCP_UNKNOWN_TOOL = "Tool {name} not found"
MCP_DISABLED_TOOL = "Tool {name} disabled"
MCP_BAD_ARGUMENTS = "Input validation error: Invalid arguments for tool {name}: {problem}"
# Zod 4's English messages for the issues the tools' schemas can raise (``zod`` 4
# ``locales/en.ts``); ``mcp.zod`` renders the issues as ``JSON.stringify(issues, null, 2)``.
ZOD_INVALID_TYPE = "Invalid input: expected {expected}, received {got}"
ZOD_INVALID_OPTION = "Invalid option: expected one of {options}"
ZOD_TOO_BIG = "Too big: expected {origin} to be {bound}"
ZOD_TOO_SMALL = "Too small: expected {origin} to be {bound}"
ZOD_TOO_MANY = "Too big: expected array to have {bound} items"
ZOD_TOO_FEW = "Too small: expected array to have {bound} items"
ZOD_SAFE_INTEGER_NOTE = "Integers must be within the safe integer range."
# [assumed] the refines a TypeScript server would add to its Zod schema: ctx_get's one of
# id and externalId, and the fake's own bound on nesting (JSON.parse has none; REST has it)
ZOD_EXACTLY_ONE = "Give exactly one of {names}."
MCP_TOO_DEEP = "JSON nested deeper than {depth} levels"
# an alias given with the parameter it names (``tool_shapes.MCP_ALIASES_UNTIL``)
MCP_ALIAS_AND_NAME = (
    "Give {name} only: {alias} is its former name (accepted alone until fake-contextq "
    "{until}), and both were given."
)
# [assumed] the TypeScript SDK's streamable HTTP transport (v1.29.0
# ``src/server/webStandardStreamableHttp.ts``): a 400 with JSON-RPC code -32000
MCP_UNSUPPORTED_VERSION = (
    "Bad Request: Unsupported protocol version: {version} (supported versions: {versions})"
)
# the bridge's own tool errors (ContextQ unreachable or its answer unusable)
MCP_UNREACHABLE = "ContextQ could not be reached at {url}: {reason}"
MCP_UNUSABLE = (
    "The ContextQ at {url} answered {method} {path} with {status} and something unusable: "
    "{what}. It may be no ContextQ (check CONTEXT_API_URL), or it failed."
)
MCP_ANSWER_NOT_JSON = "a body that is not JSON ({detail})"
# [assumed] arguments holding NaN or Infinity (the SDK's JSON-RPC parser takes ``NaN``,
# ``Infinity`` and ``1e400``): ContextQ's JSON.parse takes no NaN and Zod's z.number() no
# Infinity, and no REST body can carry either, so nothing is sent
MCP_NOT_JSON_NUMBER = (
    "The arguments hold a number JSON cannot carry (NaN or Infinity): nothing was sent to "
    "ContextQ at {url}."
)
MCP_ANSWER_TOO_LARGE = "a body of {size} bytes, over the {limit} bytes a tool reads"
MCP_NOT_AN_ERROR_BODY = "{got} where ContextQ's error body was due"
MCP_NOT_SUCCESS = "no answer to use (neither a success nor an error)"
MCP_WRONG_KIND = "{got} where a JSON object was due"
MCP_NOT_A_PAGE = "a list answer that is no page: {problem}"
MCP_NOT_AN_IMPORT = "an import answer that is not one: {problem}"
MCP_DEADLINE = (
    "The ContextQ at {url} did not finish answering {tool} within {seconds:g} s (the "
    "bridge's deadline for one tool call); nothing more was waited for."
)
MCP_KEY_NOT_SENDABLE = (
    "fake-contextq mcp: CONTEXT_API_KEY holds a space, a control character or a character "
    "outside ASCII, which no HTTP header carries; a ContextQ key is sk_live_ and 40 hex digits"
)
MCP_URL_UNUSABLE = (
    "fake-contextq mcp: CONTEXT_API_URL is no http(s) URL with a host ({url}); set it to "
    "ContextQ's base URL, e.g. {example}"
)
MCP_ORIGIN_REFUSED = (
    "Origin {origin} may not use this fake's /mcp: bound to loopback, it answers only pages "
    "served from loopback (http://127.0.0.1:<port>, http://localhost:<port>, "
    "http://[::1]:<port>), as its DNS-rebinding protection does; serve it on another host "
    "to allow any origin."
)
MCP_NO_KEY_ENV = (
    "fake-contextq mcp: set CONTEXT_API_KEY to a ContextQ API key (and CONTEXT_API_URL to its "
    "base URL; default {url})"
)

# Links between contexts
LINK_TO_SELF = "A context cannot be linked to itself."
LINK_EXISTS_MSG = (
    "Context {source} is already linked to context {target} as {relation!r} (link {id})."
)
BAD_RELATION = (
    "Relation must be 1-{max} characters of lowercase letters, digits, '_' and '-', "
    "starting with a letter (e.g. 'related', 'supports', 'part_of')."
)

# Ingest
INGEST_JOB_NOT_FOUND = "Ingest job {id} not found."
INGEST_NEEDS_ONE = "Give exactly one of 'text' and 'url'."
INGEST_BAD_SCHEME = (
    "Only a data: URL is read here (text/plain or text/markdown); got a {scheme!r} URL."
)
INGEST_NOT_DATA_URL = "Malformed data: URL: no ',' ends its media type."
INGEST_BAD_MEDIA_TYPE = "Media type {media_type!r} is not ingested; one of {types}."
INGEST_BAD_CHARSET = "Charset {charset!r} is not read; the text must be UTF-8."
INGEST_BAD_BASE64 = "The data: URL's base64 does not decode."
INGEST_NOT_UTF8 = "The data: URL's text is not UTF-8."
INGEST_BLANK = "Nothing to ingest: the text is blank."
INGEST_TOO_MANY_PARTS = (
    "The text splits into {count} parts at its top-level headings; one ingest makes at "
    "most {max} contexts."
)
#: 501 not_faked: a http(s) URL. Worded so no one takes it for ContextQ's own answer.
INGEST_NO_FETCH = (
    "fake-contextq does not fetch URLs: this fake never reaches the network, so {url} was "
    "not read and no ingest job was made. The real ContextQ is assumed to download the page "
    "and ingest its text as a job. With the fake, send the text itself ('text') or as a "
    "data: URL (text/plain or text/markdown)."
)
INGEST_UNTITLED = "Untitled"
