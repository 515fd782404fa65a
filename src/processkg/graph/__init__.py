"""The store: a versioned Oxigraph folder or a SPARQL server, the bounds of a query, statistics and the
fidelity audit."""
