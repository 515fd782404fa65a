"""bpmn."""
