"""Rescue first: the guard pipeline, snapshots, rescue refs, restore, worktrees and the reaper."""
