from __future__ import annotations

from guards.main import main

raise SystemExit(main())
