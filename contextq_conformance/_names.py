"""Names the command line needs before anything heavy is imported."""

from __future__ import annotations

from typing import Final

#: What the suite can run against.
TARGETS: Final = ("in-process", "served", "live")
