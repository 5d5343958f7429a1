"""What a person or an agent is told: the frame (what a turn inherits) and status."""
