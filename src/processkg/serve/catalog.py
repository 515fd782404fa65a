"""Discovery: the server root's list of services and SAP Gateway's V2 catalog service.

SAP clients (the Cloud SDK's service discovery, Fiori tools, pyodata pointed at the catalog) list
the services of a system through ``/sap/opu/odata/IWFND/CATALOGSERVICE;v=2/ServiceCollection``;
this is that entity set for the V2 services the store serves, with a ``$metadata`` that declares
only what the answer holds. ``GET /`` lists every service (V2 and V4) with its path.
"""

from __future__ import annotations

from xml.sax.saxutils import escape

from processkg.errors import ServeHTTPError

CATALOG = "/sap/opu/odata/IWFND/CATALOGSERVICE;v=2"
NAMESPACE = "CATALOGSERVICE"
FIELDS = ("ID", "Description", "Title", "TechnicalServiceName", "TechnicalServiceVersion", "ServiceUrl", "MetadataUrl")


def is_catalog(path: str) -> bool:
    return path == CATALOG or path.startswith(CATALOG + "/")


def root_page(services: dict[str, tuple[str, str]], origin: str) -> dict[str, object]:
    """``GET /``: every service by name with its version and URL, and where the catalog is.
    ``services`` maps a service's root path to (name, OData version)."""
    listed = [
        {"service": name, "version": version, "url": origin + root, "metadata": f"{origin}{root}$metadata"}
        for root, (name, version) in sorted(services.items(), key=lambda item: item[1][0])
    ]
    return {"services": listed, "catalog": f"{origin}{CATALOG}/ServiceCollection"}


def answer(path: str, services: dict[str, tuple[str, str]], origin: str) -> tuple[str, object]:
    """The catalog's answer to ``GET path``: ("xml", text) for ``$metadata``, ("json", body) otherwise;
    404 for anything else."""
    rest = path[len(CATALOG) :].strip("/")
    if rest == "":
        return "json", {"d": {"EntitySets": ["ServiceCollection"]}}
    if rest == "$metadata":
        return "xml", METADATA
    if rest == "ServiceCollection":
        return "json", {"d": {"results": entries(services, origin)}}
    raise ServeHTTPError(404, "not-found", f"the catalog service has ServiceCollection and $metadata, not {rest}")


def entries(services: dict[str, tuple[str, str]], origin: str) -> list[dict[str, object]]:
    """One ``ServiceCollection`` entry per V2 service, named as SAP names them (``ID`` ``Z..._0001``)."""
    out: list[dict[str, object]] = []
    for root, (name, version) in sorted(services.items(), key=lambda item: item[1][0]):
        if version.startswith("4"):
            continue
        key = f"{name}_0001"
        uri = f"{origin}{CATALOG}/ServiceCollection('{key}')"
        values = [key, name, name, name, "1", origin + root, f"{origin}{root}$metadata"]
        entry: dict[str, object] = {"__metadata": {"id": uri, "uri": uri, "type": f"{NAMESPACE}.Service"}}
        entry.update(zip(FIELDS, values, strict=True))
        out.append(entry)
    return out


def _metadata() -> str:
    props = "".join(
        f'<Property Name="{escape(name)}" Type="Edm.String" Nullable="{"false" if name == "ID" else "true"}"/>'
        for name in FIELDS
    )
    return (
        '<?xml version="1.0" encoding="utf-8"?>'
        '<edmx:Edmx Version="1.0" xmlns:edmx="http://schemas.microsoft.com/ado/2007/06/edmx"'
        ' xmlns:m="http://schemas.microsoft.com/ado/2007/08/dataservices/metadata"'
        ' xmlns:sap="http://www.sap.com/Protocols/SAPData">'
        '<edmx:DataServices m:DataServiceVersion="2.0">'
        f'<Schema Namespace="{NAMESPACE}" xml:lang="en" xmlns="http://schemas.microsoft.com/ado/2008/09/edm">'
        f'<EntityType Name="Service"><Key><PropertyRef Name="ID"/></Key>{props}</EntityType>'
        f'<EntityContainer Name="{NAMESPACE}_Entities" m:IsDefaultEntityContainer="true">'
        f'<EntitySet Name="ServiceCollection" EntityType="{NAMESPACE}.Service"/>'
        "</EntityContainer></Schema></edmx:DataServices></edmx:Edmx>"
    )


METADATA = _metadata()
