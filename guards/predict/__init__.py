"""What a command would destroy, computed before it runs: git's command line, the shell
line, the blast radius."""
