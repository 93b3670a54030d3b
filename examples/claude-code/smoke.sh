#!/usr/bin/env bash
# Smoke-test Claude Code + ContextQ offline: Claude Code runs headless (claude -p) against
# the scripted model (fake-anthropic serve script.json) and ContextQ's MCP endpoint (a fake
# one, fake-contextq serve, unless CONTEXT_API_URL and CONTEXT_API_KEY name another), with
# tool search on as by default. The script has Claude call ToolSearch to load ContextQ's
# ctx_save, call it, and answer; this checks the answer, that every scripted turn was played
# as written, and that the context landed in ContextQ.
#
#   ./smoke.sh                                  # the pinned Claude Code of this folder (npm ci)
#   CLAUDE_BIN=$(command -v claude) ./smoke.sh  # the one on your PATH
#
# SMOKE_SCRIPT, SMOKE_PROMPT and SMOKE_EXPECT (a title to find in ContextQ) play another
# script; SMOKE_TRANSCRIPT=FILE keeps the scripted model's transcript.
#
# Needs: fake-contextq and fake-anthropic on PATH (pip install 'contextq-memory-tool[fake]'),
# python3 and curl. Prints Claude Code's answer and the saved context; exits 1 on a failure,
# showing the scripted model's transcript (what Claude Code sent, and what differed).
set -euo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
claude="${CLAUDE_BIN:-$here/node_modules/.bin/claude}"
script="${SMOKE_SCRIPT:-$here/script.json}"
prompt="${SMOKE_PROMPT:-Remember that deploys are frozen on Fridays.}"
expected="${SMOKE_EXPECT:-Deploys are frozen on Fridays.}"

work="$(mktemp -d)"
pids=()
cleanup() {
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  rm -rf "$work"
}
trap cleanup EXIT

fail() {
  echo "smoke.sh: $*" >&2
  exit 1
}

[ -x "$claude" ] || fail "no Claude Code at $claude (npm ci in $here, or set CLAUDE_BIN)"

# banner FILE NAME: the value of NAME=... once the server has printed it (20 s at most)
banner() {
  for _ in $(seq 1 200); do
    value="$(sed -n "s/^$2=//p" "$1" | head -n 1)"
    [ -n "$value" ] && { echo "$value"; return 0; }
    sleep 0.1
  done
  cat "$1" >&2
  fail "no $2 in the banner of $1"
}

# 1. ContextQ: the one given, else a fake in memory on a free port.
if [ -z "${CONTEXT_API_URL:-}" ]; then
  fake-contextq serve --memory --port 0 >"$work/contextq.out" 2>&1 &
  pids+=("$!")
  CONTEXT_API_URL="$(banner "$work/contextq.out" CONTEXT_API_URL)"
  CONTEXT_API_KEY="$(banner "$work/contextq.out" CONTEXT_API_KEY)"
fi
: "${CONTEXT_API_KEY:?CONTEXT_API_URL is set: set CONTEXT_API_KEY too}"
mcp_url="${CONTEXTQ_MCP_URL:-$CONTEXT_API_URL/mcp}"

# 2. The scripted model. Claude Code sends betas the scripted model does not model; each is
#    played as if it were not sent (see README.md: what each one is, and why that is safe).
fake-anthropic serve "$script" --port 0 \
  --ignore-beta per-turn-control-2026-07-01 \
  --ignore-beta mid-conversation-tool-changes-2026-07-01 \
  --ignore-beta thinking-token-count-2026-05-13 \
  >"$work/model.out" 2>"$work/model.err" &
model_pid="$!"
pids+=("$model_pid")
model_url="$(banner "$work/model.out" ANTHROPIC_BASE_URL)"

# 3. Claude Code's MCP configuration: ContextQ over streamable HTTP, with its key.
URL="$mcp_url" KEY="$CONTEXT_API_KEY" python3 -c '
import json, os
server = {"type": "http", "url": os.environ["URL"],
          "headers": {"Authorization": "Bearer " + os.environ["KEY"]}}
print(json.dumps({"mcpServers": {"contextq": server}}))' >"$work/mcp.json"

# 4. Claude Code, headless and offline: a fresh HOME and config, nothing of the caller's
#    environment (no real key, no proxy), no telemetry, no update check.
mkdir -p "$work/home/.claude" "$work/project"
status=0
(cd "$work/project" && env -i \
  PATH="$PATH" \
  HOME="$work/home" \
  CLAUDE_CONFIG_DIR="$work/home/.claude" \
  ANTHROPIC_BASE_URL="$model_url" \
  ANTHROPIC_API_KEY="sk-ant-offline-smoke-test" \
  CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1 \
  DISABLE_TELEMETRY=1 \
  DISABLE_AUTOUPDATER=1 \
  "$claude" -p "$prompt" \
  --mcp-config "$work/mcp.json" --strict-mcp-config \
  --allowedTools mcp__contextq__ctx_save \
  >"$work/claude.out" 2>"$work/claude.err") || status=$?

# 5. Stop the scripted model: it exits 0 only if every turn was played, none overrun.
kill -TERM "$model_pid"
model_status=0
wait "$model_pid" || model_status=$?
[ -z "${SMOKE_TRANSCRIPT:-}" ] || cp "$work/model.out" "$SMOKE_TRANSCRIPT"
if [ "$status" -ne 0 ] || [ "$model_status" -ne 0 ]; then
  echo "--- claude (exit $status):" >&2
  cat "$work/claude.out" "$work/claude.err" >&2
  echo "--- scripted model (exit $model_status):" >&2
  cat "$work/model.out" "$work/model.err" >&2
  fail "Claude Code did not play the script"
fi
echo "claude: $(cat "$work/claude.out")"

# 6. What landed in ContextQ, through its REST API.
curl -sf "$CONTEXT_API_URL/api/contexts?limit=500" -H "Authorization: Bearer $CONTEXT_API_KEY" \
  >"$work/contexts.json" || fail "cannot list ContextQ's contexts at $CONTEXT_API_URL"
EXPECTED="$expected" python3 -c '
import json, os, sys
expected = os.environ["EXPECTED"]
titles = [row["title"] for row in json.load(sys.stdin)["items"]]
if expected not in titles:
    sys.exit("smoke.sh: no context titled %r in ContextQ: %r" % (expected, titles))
print("contextq: saved %r" % expected)' <"$work/contexts.json"
echo "smoke test passed"
