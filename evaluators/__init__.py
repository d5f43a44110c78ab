"""Pure scoring of trajectories against expectations."""
