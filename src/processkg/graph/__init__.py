"""graph."""
