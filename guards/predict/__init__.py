"""What a command would destroy, computed before it runs: git's command line (cmdline,
with git's option tables in options), the shell line (shell, lexed by shell_lexer), the
blast radius (blast)."""

#: Subcommands for which ``cmdline.could_destroy`` may answer True. Everything else cannot
#: destroy or move uncommitted work (the shim passes it to git without starting Python).
DESTRUCTIVE_SUBCOMMANDS: frozenset[str] = frozenset(
    {
        "am",
        "apply",
        "bisect",
        "branch",
        "checkout",
        "checkout-index",
        "cherry-pick",
        "clean",
        "fetch",
        "filter-branch",
        "gc",
        "merge",
        "mv",
        "pull",
        "push",
        "read-tree",
        "rebase",
        "reflog",
        "reset",
        "restore",
        "revert",
        "rm",
        "sparse-checkout",
        "stash",
        "submodule",
        "switch",
        "worktree",
    }
)
