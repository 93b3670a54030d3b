"""The engine: what the scripted model does with a request. It validates it as the API
does, applies context editing and compaction, counts usage, signs thinking, and makes the
answer (JSON or an event stream). It builds on ``script`` and nothing above it."""

from fake_anthropic.engine.engine import Answer, Engine, TokenEstimate, estimate_tokens, new_id
from fake_anthropic.engine.ledger import Ledger

__all__ = ["Answer", "Engine", "Ledger", "TokenEstimate", "estimate_tokens", "new_id"]
