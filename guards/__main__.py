from __future__ import annotations

from guards.errors import collect_rarely, exit_now

collect_rarely()
from guards.main import main  # noqa: E402 (after the collector's tuning)

exit_now(main())
