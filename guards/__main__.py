from __future__ import annotations

from guards.errors import exit_now
from guards.main import main

exit_now(main())
