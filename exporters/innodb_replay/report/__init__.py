"""``innodb-replay report``: the post-incident report, one self-contained HTML file (build.py).

Its modules read the signals (signals/) and the runbooks (docs/runbooks.md) of the checkout this runs in, as
``import`` reads the checkout's rules: ``checkout()`` puts that checkout on the path before they are imported.
"""

from __future__ import annotations

import importlib.util
import os
import sys

from ..links import CHECKOUT


class ReportError(Exception):
    """The report cannot be made; nothing was written."""


def checkout() -> None:
    """Make the checkout's signals/ importable, or say why the report cannot run here."""
    if importlib.util.find_spec("signals") is not None:
        return
    if not os.path.isdir(os.path.join(CHECKOUT, "signals")):
        raise ReportError("the report reads the dashboards' signals (signals/) and docs/runbooks.md of a checkout of "
                         "this repository: run innodb-replay from one")
    sys.path.insert(0, CHECKOUT)
