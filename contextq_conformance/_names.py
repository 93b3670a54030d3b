"""Names the command line needs before anything heavy is imported."""

from __future__ import annotations

from typing import Final

#: What the suite can run against.
TARGETS: Final = ("in-process", "served", "live")
#: The exit status of a run whose target could not be set up: nothing was checked.
UNREACHABLE_EXIT: Final = 3
