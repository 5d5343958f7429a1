from __future__ import annotations

import sys

if sys.argv[1:2] == ["run"]:
    # The guarded git is the hot path: skip argparse and every other subcommand.
    from guards.commands.run import main as guarded_git

    raise SystemExit(guarded_git(sys.argv[2:]))

from guards.main import main

raise SystemExit(main())
