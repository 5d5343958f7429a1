"""One module per ``guards`` subcommand: ``HELP``, ``configure(parser)``, ``run(args)``."""
