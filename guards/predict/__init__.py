"""What a command would destroy, computed before it runs: git's command line (cmdline,
with git's option tables in options), the shell line (shell, lexed by shell_lexer), the
blast radius (blast)."""
