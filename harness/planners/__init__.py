"""Built-in planners; each module is an ordinary plugin registering one planner."""
