"""SAP's movement types, as kg serve keeps its generated material document items consistent with them.

A generated record fills every short reference property with a document number (``serve/data.py``), so
a generated material document item named a purchase order, a cost center, a sales order, a delivery and
a manufacturing order at once, whatever its movement type. The data file shipped with the package,
``assets/movement_types/movement-type-objects.json`` (its ``source`` field names where each statement
comes from), says which business objects an item of each standard movement type names: 101 a purchase
order, 201 a cost center, 261 an order, 311 the issuing or receiving plant and storage location, a
reversal (102, 202, ...) the reversed document too. :func:`derive` leaves the reference properties of
the other objects empty, so a goods issue to a cost center names no purchase order. Movement types the
file does not list (another tenant's own) and properties of no object in it are left as generated.
"""

from __future__ import annotations

import json
from pathlib import Path

from processkg.assets import asset
from processkg.errors import AssetMissingError
from processkg.services.model import TypeInfo

MOVEMENTS = ("movement_types", "movement-type-objects.json")  # the shipped data file, under assets/
#: The property that holds a record's movement type.
MOVEMENT_TYPE = "GoodsMovementType"


def _read(path: Path) -> tuple[dict[str, tuple[str, ...]], dict[str, tuple[str, ...]]]:
    """The objects (name -> properties) and the movement types (code -> objects) of the data file; a file
    that does not read as such is a damaged installation."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        objects = {str(k): tuple(str(p) for p in v) for k, v in data["objects"].items()}
        movements = {str(k): tuple(str(o) for o in v) for k, v in data["movement_types"].items()}
    except (OSError, UnicodeDecodeError, ValueError, KeyError, TypeError, AttributeError) as exc:
        raise AssetMissingError(f"{path}: packaged asset damaged ({exc!r}); reinstall processkg") from None
    unknown = sorted({o for names in movements.values() for o in names} - set(objects))
    if unknown:
        raise AssetMissingError(f"{path}: movement_types names objects it does not list: {', '.join(unknown)}")
    return objects, movements


#: Business object -> the properties of a material document item that name it.
OBJECTS, MOVEMENT_OBJECTS = _read(asset(*MOVEMENTS))
#: Every property that names one of :data:`OBJECTS`.
OBJECT_PROPS = frozenset(p for props in OBJECTS.values() for p in props)


def named_objects(code: str) -> frozenset[str] | None:
    """The properties an item of movement type ``code`` names; None for a movement type the file does not
    list."""
    objects = MOVEMENT_OBJECTS.get(code)
    return None if objects is None else frozenset(p for o in objects for p in OBJECTS[o])


def derive(type_: TypeInfo, keys: list[str], record: dict[str, object]) -> None:
    """Leave empty the reference properties of ``record`` (a generated record of ``type_``) that name an
    object its movement type does not (a purchase order on a goods issue to a cost center)."""
    if MOVEMENT_TYPE not in type_.props:
        return
    kept = named_objects(str(record.get(MOVEMENT_TYPE) or ""))
    if kept is None:
        return
    for name in OBJECT_PROPS - kept:
        if name in record and name not in keys:
            del record[name]
