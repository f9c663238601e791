"""Model wires: what one model API's JSON and streams look like, in both directions."""
