"""odata."""
