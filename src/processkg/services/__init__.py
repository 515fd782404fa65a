"""The service model: the services of a store as the readers of one service see them.

Between the graph and its readers: :mod:`processkg.services.model` reads from the store what
validation, the OData server, the agent's tools and the typed context of a retrieval need to know
of a service (its entity sets and their rules, its entity and complex types with their
properties, navigations and known codes, its operations, what a create requires), one service at
a time, on that service's first use.
"""
