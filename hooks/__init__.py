"""Non-Python hook assets of guards (the `git` shim), shipped as package data."""
