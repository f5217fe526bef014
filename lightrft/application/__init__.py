"""Services (the colocated RL cycle and friends), written against domain ports only."""
