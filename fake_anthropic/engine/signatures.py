"""The signatures the scripted model issues for thinking and compaction blocks, and the
check of a block sent back: the API verifies that a block is one it produced, unchanged."""

from __future__ import annotations

import hashlib
import secrets

from fake_anthropic.engine import assumptions as assumed


class Signatures:
    """Every signature issued, with the text it signs, and every redacted-thinking payload."""

    def __init__(self) -> None:
        self._thinking: dict[str, str] = {}
        self._redacted: set[str] = set()
        self._compaction: dict[str, str] = {}

    @staticmethod
    def _new(text: str) -> str:
        digest = hashlib.sha256(text.encode()).hexdigest()[:16]
        return f"{assumed.SIGNATURE_PREFIX}{digest}{secrets.token_hex(8)}"

    def sign_thinking(self, text: str, given: str | None = None) -> str:
        """``given`` (a scripted signature) or a new one, remembered for ``text``."""
        signature = given if given is not None else self._new(text)
        self._thinking[signature] = text
        return signature

    def thinking_ok(self, signature: object, text: object) -> bool:
        return isinstance(signature, str) and self._thinking.get(signature) == text

    def add_redacted(self, data: str) -> None:
        self._redacted.add(data)

    def redacted_ok(self, data: object) -> bool:
        return isinstance(data, str) and data in self._redacted

    def sign_compaction(self, content: str) -> str:
        signature = self._new(content)
        self._compaction[signature] = content
        return signature

    def compaction_fault(self, signature: object, content: object) -> str | None:
        """None if the block verifies, else the API's error code for it."""
        if not isinstance(signature, str) or signature not in self._compaction:
            return "compaction_signature_invalid"
        if self._compaction[signature] != content:
            return "compaction_content_mismatch"
        return None
