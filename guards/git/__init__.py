"""guards' knowledge of git, in one place: how it runs (:mod:`.process`), its formats,
constants and queries (one module each). Importing the package loads nothing: the
every-edit record reads a repository without running git."""
