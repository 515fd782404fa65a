"""SAP's Best Practices reference organisation, as kg serve keeps its records consistent with it.

The code lists (``data/sap/codes/org-structure.csv``, bound by ``bindings.yaml``) say which org units
exist; they cannot say how the units hang together. The data file shipped with the package,
``assets/org_units/reference-organisation.json`` (its ``source`` field names where each statement comes
from), does, for the reference organisation of SAP's Best Practices (the "Org Data Overview" of
S/4HANA 1909 and 2408, the source the codes README names): company code 1010 is German and books in
euros, 1310 Chinese in yuan, 1710 American in dollars; plant, sales organisation, purchasing
organisation and shipping point ``##10`` belong to company code ``##10``; storage locations ``##1A``,
``##1B``, ``##1C``, ``##1E`` and ``##1R`` to plant ``##10``. A store with other org units (another
tenant's codes) is not touched by it: only values the table knows are derived or checked.

Used twice: :func:`derive` makes a generated record consistent (its currencies those of its company
code, an org-unit record's country and company code its own, a storage location one of its plant's),
and :func:`check_pairs` refuses a write whose (plant, storage location) pair the organisation does
not define (``storage-location-not-in-plant``, with the plant's storage locations as the hint).
"""

from __future__ import annotations

import json
from pathlib import Path

from processkg.aliases import JSONObject
from processkg.assets import asset
from processkg.errors import AssetMissingError
from processkg.services.model import Prop, TypeInfo, made_once

ORGANISATION = ("org_units", "reference-organisation.json")  # the shipped data file, under assets/


def _read(path: Path) -> tuple[dict[str, tuple[str, str]], dict[str, str], dict[str, tuple[str, ...]]]:
    """The company codes (country, currency), the unit -> company code and plant -> storage locations of
    the organisation file; a file that does not read as such is a damaged installation."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        companies = {str(k): (str(v["country"]), str(v["currency"])) for k, v in data["company_codes"].items()}
        units = {str(k): str(v) for k, v in data["unit_company"].items()}
        locations = {str(k): tuple(str(x) for x in v) for k, v in data["storage_locations"].items()}
    except (OSError, UnicodeDecodeError, ValueError, KeyError, TypeError, AttributeError) as exc:
        raise AssetMissingError(f"{path}: packaged asset damaged ({exc!r}); reinstall processkg") from None
    unknown = sorted(set(units.values()) - set(companies))
    if unknown:
        raise AssetMissingError(f"{path}: unit_company names company codes it does not list: {', '.join(unknown)}")
    return companies, units, locations


_COMPANIES, _UNITS, _LOCATIONS = _read(asset(*ORGANISATION))
#: Company code -> (country, currency) (ISO 3166-1 alpha-2, ISO 4217).
COMPANY_CODES: dict[str, tuple[str, str]] = _COMPANIES
#: The properties that name a company code, a plant, or another unit that belongs to a company code.
COMPANY_CODE_PROPS = ("CompanyCode", "BillingCompanyCode")
PLANT_PROPS = (
    "Plant",
    "ProductionPlant",
    "SupplyingPlant",
    "ReceivingPlant",
    "IssuingOrReceivingPlant",
    "MaintenancePlant",
    "MaintenancePlanningPlant",
)
UNIT_PROPS = ("SalesOrganization", "SalesOrderSalesOrganization", "PurchasingOrganization", "ShippingPoint")
#: Org unit (plant, sales organisation, ...) -> its company code: unit ``##10`` belongs to company code ``##10``.
UNIT_COMPANY: dict[str, str] = _UNITS
#: Plant -> its storage locations.
STORAGE_LOCATIONS: dict[str, tuple[str, ...]] = _LOCATIONS
#: (plant property, storage location property) pairs of one record: the location is one of the plant's.
#: A storage location goes with the first of its plant properties that the type has (a sales order
#: item's ``StorageLocation`` is in its ``ProductionPlant``).
PAIRS = (
    ("Plant", "StorageLocation"),
    ("ProductionPlant", "StorageLocation"),
    ("IssuingOrReceivingPlant", "IssuingOrReceivingStorageLoc"),
    ("ReceivingPlant", "ReceivingStorageLocation"),
    ("SupplyingPlant", "IssuingStorageLocation"),
)
#: Properties whose generated value follows the document's org unit, item records included (an item's
#: plant is in its order's company code).
ORG_UNIT_PROPS = frozenset(COMPANY_CODE_PROPS + PLANT_PROPS + UNIT_PROPS)


def company_of(record: dict[str, object]) -> str | None:
    """The company code ``record`` belongs to: the one it names, else the one of its org unit or plant."""
    for prop in COMPANY_CODE_PROPS:
        if str(record.get(prop)) in COMPANY_CODES:
            return str(record[prop])
    for prop in UNIT_PROPS + PLANT_PROPS:
        unit = UNIT_COMPANY.get(str(record.get(prop)))
        if unit is not None:
            return unit
    return None


def derive(type_: TypeInfo, keys: list[str], record: dict[str, object], i: int) -> None:
    """Make a generated ``record`` consistent with the organisation: an org-unit record (keyed by a unit)
    names its unit's company code and country; every currency (a ``...Currency`` text) is its company
    code's; a storage location is one of its plant's (the ``i``-th, cycling; in the key too, as in
    ``A_MatlStkInAcctMod``, so the caller keys the record after this)."""
    props = type_.props
    own = str(record.get(keys[0])) if len(keys) == 1 and keys[0] in ORG_UNIT_PROPS else None
    if own is not None and own in UNIT_COMPANY:
        for prop in COMPANY_CODE_PROPS:
            if prop in props and prop not in keys:
                record[prop] = UNIT_COMPANY[own]
    company = company_of(record)
    if company is not None:
        country, currency = COMPANY_CODES[company]
        if own is not None and "Country" in props and _takes(props["Country"].codes, country):
            record["Country"] = country
        for name in [n for n in record if n in props and _is_currency(props[n], currency)]:
            record[name] = currency
    for plant_prop, location_prop in pairs_of(type_):
        locations = STORAGE_LOCATIONS.get(str(record.get(plant_prop)))
        if locations and str(record.get(location_prop, locations[0])) not in locations:
            record[location_prop] = locations[i % len(locations)]


def _is_currency(prop: Prop, currency: str) -> bool:
    """A currency key (``TransactionCurrency``, ``SalesOrganizationCurrency``) that can hold ``currency``."""
    return (
        prop.name.endswith("Currency")
        and not prop.key
        and prop.edm_type == "Edm.String"
        and _takes(prop.codes, currency)
        and (prop.max_length or len(currency)) >= len(currency)
    )


def pairs_of(type_: TypeInfo) -> tuple[tuple[str, str], ...]:
    """The (plant, storage location) property pairs of ``type_``: per location, its first plant property
    (made once per type: :func:`~processkg.services.model.made_once`)."""
    return made_once(type_, _pairs)


def _pairs(type_: TypeInfo) -> tuple[tuple[str, str], ...]:
    found: dict[str, str] = {}
    for plant, location in PAIRS:
        if plant in type_.props and location in type_.props:
            found.setdefault(location, plant)
    return tuple((plant, location) for location, plant in found.items())


def _takes(codes: tuple[str, ...] | None, value: str) -> bool:
    return codes is None or value in codes


def check_pairs(type_: TypeInfo, payload: JSONObject, pointer: str = "") -> list[dict[str, str]]:
    """One ``storage-location-not-in-plant`` detail per (plant, storage location) pair of ``payload`` (the
    record as it will be) that the organisation does not define; a plant it does not know is not judged
    (its code list does that)."""
    details = []
    for plant_prop, location_prop in pairs_of(type_):
        plant, location = payload.get(plant_prop), payload.get(location_prop)
        if location in (None, ""):
            continue
        locations = STORAGE_LOCATIONS.get(str(plant))
        if locations is None or str(location) in locations:
            continue
        details.append(
            {
                "code": "storage-location-not-in-plant",
                "target": f"{pointer}/{location_prop}",
                "message": f"{location_prop}={location!r} is no storage location of {plant_prop}={plant!r} "
                f"(SAP's reference organisation); the storage locations of plant {plant}: {', '.join(locations)}; "
                f"use one of them, or the plant the storage location belongs to",
            }
        )
    return details
