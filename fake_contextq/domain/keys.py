"""How an API key is stored: its bcrypt hash and its display prefix.

A service's storage rule, not a wire fact: the production client never hashes a key, so
this lives with the fake (and the live fixtures, which mint keys into a real stack's
database, import it from here). Each line is marked ``[public]``, ``[seed]`` or
``[assumed]`` as in ``adapter.wire``.
"""

from __future__ import annotations

import hashlib
import hmac
from typing import Final

from fake_contextq import _msgs

KEY_DISPLAY_PREFIX_LENGTH: Final = 12  # [assumed] kept for display, the audit log and lookup

# [public] "API keys are stored bcrypt-hashed; the plaintext is shown once, at creation"
# (ContextQ's security page). A salted hash cannot be found by equality, so [assumed] a
# service finds the row by the key's stored 12-character prefix and then verifies.
KEY_HASH_BCRYPT: Final = "bcrypt"
KEY_HASH_SHA256: Final = "sha256"  # this project's earlier assumption, still read
KEY_HASH_SCHEMES: Final = (KEY_HASH_BCRYPT, KEY_HASH_SHA256)
DEFAULT_KEY_HASH: Final = KEY_HASH_BCRYPT  # [public]
# [assumed] bcryptjs's default cost (10), what a TypeScript service most likely uses; the
# fake chooses a lower cost for its own keys (FAKE_BCRYPT_ROUNDS). A service verifies a
# hash at the cost stored in it, so the live fixtures may mint cheaper keys.
LIVE_BCRYPT_ROUNDS: Final = 10
BCRYPT_COSTS: Final = range(4, 32)  # what bcrypt takes
#: The bcrypt cost of the fake's own keys: bcrypt's lowest. A fake holds test keys, and a
#: fixture must mint one in well under 5 ms (cost 4 takes about 1 ms, the real service's
#: likely 10 about 60 ms); a key's cost is stored in its hash, so verifying reads any.
FAKE_BCRYPT_ROUNDS: Final = 4


def hash_key(
    plaintext: str, scheme: str = DEFAULT_KEY_HASH, *, rounds: int = LIVE_BCRYPT_ROUNDS
) -> str:
    """[public] bcrypt (salted; the cost is stored in the hash); ``sha256`` is the hex of the
    whole key, for a stack that differs. bcrypt comes with the ``fake`` and ``live`` extras,
    imported only when a key is hashed with it."""
    if scheme == KEY_HASH_SHA256:
        return hashlib.sha256(plaintext.encode()).hexdigest()
    if scheme != KEY_HASH_BCRYPT:
        raise ValueError(
            _msgs.UNKNOWN_KEY_HASH.format(scheme=scheme, schemes=", ".join(KEY_HASH_SCHEMES))
        )
    import bcrypt

    return bcrypt.hashpw(plaintext.encode(), bcrypt.gensalt(rounds)).decode("ascii")


def key_matches(plaintext: str, stored: str) -> bool:
    """Whether ``stored`` (either scheme, told apart by bcrypt's ``$2`` mark) is the hash of
    ``plaintext``; both comparisons take the same time however much of it matches."""
    if stored.startswith("$2"):
        import bcrypt

        try:
            return bcrypt.checkpw(plaintext.encode(), stored.encode("ascii"))
        except ValueError:  # not a well-formed bcrypt hash: it matches nothing
            return False
    digest = hashlib.sha256(plaintext.encode()).hexdigest().encode()
    return hmac.compare_digest(digest, stored.encode("utf-8", "surrogatepass"))


def key_display_prefix(plaintext: str) -> str:
    """[assumed] The first 12 characters are kept for display and the audit log."""
    return plaintext[:KEY_DISPLAY_PREFIX_LENGTH]
