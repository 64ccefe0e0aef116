"""``python -m rio.cli``: the same as the ``rio`` command."""

import sys

from rio.cli.main import run

sys.exit(run())
