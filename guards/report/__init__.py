"""What a person or an agent is told: the frame, status and doctor."""
