"""Readers and lifters of every input format: OData CSDL, BPMN 2.0, OpenAPI 3, the mapping YAML and code
lists."""
