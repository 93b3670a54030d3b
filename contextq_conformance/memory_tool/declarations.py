"""What a backend's owner declares about it, in one JSON or TOML file (``--declare``):

.. code-block:: toml

    [limits]
    max_file_bytes = 32768          # the largest file stored, in UTF-8 bytes
    max_view_chars = 16000          # the longest view before it is cut with a hint
    directory_sizes = "byte-sums"   # or "other" (the default): not compared

    [behaviour]
    creates_may_all_back_off = false

    [differences]
    "concurrency.lost-updates" = "why this backend differs on purpose"

A rule named under ``differences`` that fails is reported as declared, not failed.
"""

from __future__ import annotations

import json
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

from contextq_conformance.memory_tool.rules import RULES

#: How directory sizes in a view may be read: as true byte sums of the files below, or not
#: compared at all (the SDK prints a directory inode's size, which depends on the disk).
DIRECTORY_SIZES: Final = ("other", "byte-sums")
_KEYS: Final = {
    "limits": {"max_file_bytes", "max_view_chars", "directory_sizes"},
    "behaviour": {"creates_may_all_back_off"},
    "differences": None,
}


class DeclarationError(ValueError):
    """A declarations file that cannot be read, or says something the kit does not know."""


@dataclass(frozen=True)
class Declarations:
    max_file_bytes: int | None = None
    max_view_chars: int | None = None
    directory_sizes: str = "other"
    creates_may_all_back_off: bool = False
    #: rule id -> the reason it differs on purpose.
    differences: dict[str, str] = field(default_factory=dict)

    def as_json(self) -> dict[str, Any]:
        return {
            "limits": {
                "max_file_bytes": self.max_file_bytes,
                "max_view_chars": self.max_view_chars,
                "directory_sizes": self.directory_sizes,
            },
            "behaviour": {"creates_may_all_back_off": self.creates_may_all_back_off},
            "differences": dict(self.differences),
        }


def _positive(section: dict[str, Any], key: str, where: str) -> int | None:
    value = section.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise DeclarationError(f"{where}: limits.{key} must be a positive integer, got {value!r}")
    return value


def parse_declarations(data: object, where: str = "declarations") -> Declarations:
    """Declarations from the parsed file; unknown sections, keys and rule ids are errors,
    so that a typo never silently declares nothing."""
    if not isinstance(data, dict):
        raise DeclarationError(f"{where}: a table (object) of sections, got {type(data).__name__}")
    for section, value in data.items():
        if section not in _KEYS:
            raise DeclarationError(f"{where}: unknown section {section!r}; known: {sorted(_KEYS)}")
        if not isinstance(value, dict):
            raise DeclarationError(f"{where}: section {section!r} must be a table")
        known = _KEYS[section]
        unknown = sorted(set(value) - known) if known is not None else []
        if unknown:
            raise DeclarationError(f"{where}: unknown key(s) in [{section}]: {unknown}")
    limits: dict[str, Any] = data.get("limits", {})
    behaviour: dict[str, Any] = data.get("behaviour", {})
    differences: dict[str, Any] = data.get("differences", {})
    sizes = limits.get("directory_sizes", "other")
    if sizes not in DIRECTORY_SIZES:
        raise DeclarationError(
            f"{where}: limits.directory_sizes must be one of {list(DIRECTORY_SIZES)}, got {sizes!r}"
        )
    back_off = behaviour.get("creates_may_all_back_off", False)
    if not isinstance(back_off, bool):
        raise DeclarationError(f"{where}: behaviour.creates_may_all_back_off must be a boolean")
    for rule_id, reason in differences.items():
        if rule_id not in RULES:
            raise DeclarationError(f"{where}: [differences] names an unknown rule {rule_id!r}")
        if not isinstance(reason, str) or not reason.strip():
            raise DeclarationError(f"{where}: the difference {rule_id!r} needs a reason")
    return Declarations(
        max_file_bytes=_positive(limits, "max_file_bytes", where),
        max_view_chars=_positive(limits, "max_view_chars", where),
        directory_sizes=sizes,
        creates_may_all_back_off=back_off,
        differences=dict(differences),
    )


def load_declarations(path: str | Path) -> Declarations:
    """A ``.toml`` or ``.json`` declarations file."""
    path = Path(path)
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise DeclarationError(f"cannot read {path}: {exc.strerror or exc}") from None
    try:
        data = json.loads(raw) if path.suffix == ".json" else tomllib.loads(raw.decode())
    except (ValueError, UnicodeDecodeError) as exc:
        kind = "JSON" if path.suffix == ".json" else "TOML"
        raise DeclarationError(f"{path}: not valid {kind}: {exc}") from None
    return parse_declarations(data, str(path))


__all__ = [
    "DIRECTORY_SIZES",
    "DeclarationError",
    "Declarations",
    "load_declarations",
    "parse_declarations",
]
