"""guards: keeps uncommitted work alive in git checkouts that several writers share."""

from __future__ import annotations

__version__ = "0.1.0"
