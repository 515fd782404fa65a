"""Mapping proposals: activity-to-entity-set edges with scores and reasons for a person to review
(``kg map``)."""
