"""``python -m rio.cli``: the same as the ``rio`` command.

``python -m`` puts its working directory first on ``sys.path``: run in a project, the project's
own ``msgpack.py`` or ``json.py`` would be imported by Rio in place of the real one, running
its code as the user (ADR-0033). That entry goes before anything else is imported — unless it
is the folder Rio itself is run from (a checkout without an install), or ``-P`` was given."""

import os
import sys


def _project_off_the_path() -> None:
    if sys.flags.safe_path or not sys.path or not sys.path[0]:
        return
    first = os.path.realpath(sys.path[0])
    home = os.path.realpath(os.path.dirname(os.path.dirname(os.path.dirname(
        os.path.abspath(__file__)))))              # the folder that holds rio/
    if first == os.path.realpath(os.getcwd()) and first != home:
        del sys.path[0]


_project_off_the_path()

from rio.cli.main import run  # noqa: E402 -- after the path is made safe

sys.exit(run())
