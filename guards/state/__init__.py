"""Who wrote what: the ledger, sessions, attribution and the workspace that joins them."""
