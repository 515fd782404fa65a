"""validate."""
