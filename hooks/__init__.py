"""Non-Python hook assets of guards (the `git` shim, the opencode plugin), shipped as
package data."""
