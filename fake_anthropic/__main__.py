"""``python -m fake_anthropic``: the same as ``fake-anthropic``."""

import sys

from fake_anthropic.cli import main

sys.exit(main())
