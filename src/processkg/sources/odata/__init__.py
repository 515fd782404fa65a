"""OData CSDL (V2 and V4 ``$metadata``): the reader, the resolved service model, and the lifter to ``kg:``
triples."""
