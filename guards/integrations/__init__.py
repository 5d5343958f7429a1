"""Where guards plugs in: git hooks, native hooks, agent-harness hooks, aliases and the shim."""
