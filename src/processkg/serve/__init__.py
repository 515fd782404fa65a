"""serve: kg serve, a validating OData server built from the graph."""
