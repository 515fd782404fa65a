"""Validation of OData calls against the graph: payload shapes, URLs, Edm literals, operation parameters
(``kg validate``, ``kg shapes``)."""
