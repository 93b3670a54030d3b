"""``python -m fake_contextq.cli``: the same as ``fake-contextq``."""

import sys

from fake_contextq.cli.main import main

sys.exit(main())
