"""The service model reads an index first and each service on its first use (issue 24).

That each type the index lists comes back when its service is read, on the whole A2X and Fiori
corpora, is checked in tests/test_sap_annotations.py (test_every_type_of_the_index_is_read_with_its_service)
on the models that module reads in full anyway: reading the 63 Fiori services again here cost 14 s of CPU.
"""

from __future__ import annotations

from processkg.graph.handle import StoreHandle, open_store
from processkg.services.model import service_model
from processkg.tools.toolbox import Toolbox
from processkg.validate.calls import Validator

SO = "API_SALES_ORDER_SRV"
ORDER = {"SalesOrderType": "OR", "SalesOrganization": "1010", "DistributionChannel": "10"}


def test_the_index_names_every_service_and_type_and_reads_none(a2x_store):
    model = service_model(open_store(a2x_store))
    assert len(model.heads) > 40 and SO in model.services
    assert len(list(model.types)) == len(model.types) > 400
    assert model.loaded == {}


def test_asking_for_a_type_reads_its_service_alone(a2x_store):
    model = service_model(open_store(a2x_store))
    iri = model.heads[SO].types[0]
    assert model.types[iri].service == SO
    assert list(model.loaded) == [SO]


def test_a_service_read_alone_is_the_service_read_with_all(a2x_store):
    store = open_store(a2x_store)
    alone, every = service_model(store), service_model(store)
    assert len(list(every.services.values())) == len(every.heads)
    assert alone.services[SO] == every.services[SO]
    assert alone.types_of(SO) == every.types_of(SO)


def test_kg_validate_of_one_post_reads_the_service_it_addresses(a2x_store):
    validator = Validator(StoreHandle.open(a2x_store))
    call = {"method": "POST", "url": f"/sap/opu/odata/sap/{SO}/A_SalesOrder", "body": {**ORDER, "Colour": "red"}}
    result = validator.validate_call(call)
    assert [v.kind for v in result.violations] == ["unknown-property"]
    assert list(validator.model.loaded) == [SO]


def test_the_tools_read_a_service_on_first_use(a2x_store):
    box = Toolbox(StoreHandle.open(a2x_store))
    assert box.validator.model.loaded == {}
    answer, _ = box.run("validate_call", {"method": "GET", "url": f"/sap/opu/odata/sap/{SO}/A_SalesOrder?$top=1"})
    assert answer["valid"] is True
    assert list(box.validator.model.loaded) == [SO]
