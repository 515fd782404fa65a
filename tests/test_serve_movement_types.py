"""SAP's movement types in kg serve's generated material document items: an item names the business
objects of its movement type and no others (a goods issue to a cost center names no purchase order).

One server per module on the session's tasks store (A2X with SAP's code lists, among them
``data/sap/codes/movement-types.csv``, and the curated document flow); the table is the data file
shipped with the package (``assets/movement_types``).
"""

from __future__ import annotations

import csv

import pytest

from conftest import ROOT
from processkg.assets import asset
from processkg.errors import AssetMissingError
from processkg.serve import movement_types

CODES = ROOT / "data" / "sap" / "codes" / "movement-types.csv"
MD = ("API_MATERIAL_DOCUMENT_SRV", "A_MaterialDocumentItem")


def _items(server) -> list[dict[str, object]]:
    server.data.reset()
    table = server.data.table(*MD)
    assert table is not None, "the tasks store serves API_MATERIAL_DOCUMENT_SRV"
    return list(table.rows.values())


def test_a_generated_item_names_the_objects_of_its_movement_type_and_no_others(tasks_server):
    items = _items(tasks_server)
    codes = {str(r["GoodsMovementType"]) for r in items}
    assert len(codes) >= 30, "the generated items cycle through SAP's movement types"
    wrong = []
    for r in items:
        kept = movement_types.named_objects(str(r["GoodsMovementType"]))
        assert kept is not None, r["GoodsMovementType"]
        named = {p for p in movement_types.OBJECT_PROPS if r.get(p) not in (None, "")}
        if not named <= kept:
            wrong.append(
                (r["MaterialDocument"], r["MaterialDocumentItem"], r["GoodsMovementType"], sorted(named - kept))
            )
    assert wrong == []
    by_code = {str(r["GoodsMovementType"]): r for r in items}
    assert by_code["101"]["PurchaseOrder"] and by_code["101"]["PurchaseOrderItem"], "a goods receipt names its order"
    assert by_code["201"]["CostCenter"] and not by_code["201"].get("PurchaseOrder"), "a cost center issue names none"
    assert by_code["261"]["ManufacturingOrder"] and not by_code["261"].get("SalesOrder")
    assert by_code["311"]["IssuingOrReceivingStorageLoc"] and not by_code["311"].get("Delivery")
    assert by_code["102"]["ReversedMaterialDocument"] and not by_code["101"].get("ReversedMaterialDocument")
    assert by_code["641"]["Delivery"] and by_code["641"]["PurchaseOrder"], "a stock transport order ships by delivery"
    assert by_code["601"]["Delivery"] and not by_code["601"].get("PurchaseOrder"), "a delivery's goods issue"


def test_an_item_of_a_movement_type_without_a_purchase_order_is_no_goods_receipt_for_one(tasks_server):
    """The curated flow checks goods receipts (101, 103) against their purchase order item; the other items
    no longer name one, so only receipts and the movements SAP posts for a purchase order do."""
    items = _items(tasks_server)
    naming = sorted({str(r["GoodsMovementType"]) for r in items if r.get("PurchaseOrder")})
    assert naming == ["101", "102", "103", "105", "107", "109", "121", "122", "123", "124", "125", "543", "641"]


def test_the_table_is_the_shipped_data_file_and_agrees_with_the_code_list():
    path = asset(*movement_types.MOVEMENTS)
    assert movement_types._read(path) == (movement_types.OBJECTS, movement_types.MOVEMENT_OBJECTS)
    with CODES.open(encoding="utf-8") as handle:
        codes = {r["code"] for r in csv.DictReader(handle) if r["value_list"] == "GoodsMovementType"}
    assert set(movement_types.MOVEMENT_OBJECTS) == codes, "every movement type of the code list, and no other"
    reversals = {c for c, objects in movement_types.MOVEMENT_OBJECTS.items() if "reversed" in objects}
    assert all(str(int(c) - 1) in codes for c in reversals), "SAP: the reversal movement type is the type + 1"
    assert movement_types.named_objects("ZZZ") is None, "a movement type the file does not list is left alone"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("[", r"packaged asset damaged"),
        ('{"objects": {}}', r"packaged asset damaged \(KeyError\('movement_types'\)\)"),
        ('{"objects": {}, "movement_types": {"101": ["purchase_order"]}}', r"names objects it does not list"),
    ],
)
def test_a_damaged_movement_type_file_is_one_line_naming_it(tmp_path, text, message):
    path = tmp_path / "movement-type-objects.json"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(AssetMissingError, match=rf"movement-type-objects\.json: .*{message}") as caught:
        movement_types._read(path)
    assert "\n" not in str(caught.value)
