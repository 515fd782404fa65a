"""BPMN 2.0 XML: the reader with the ``bpmn:next`` derivation, and the lifter to ``bpmn:`` triples."""
