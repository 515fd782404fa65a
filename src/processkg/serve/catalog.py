"""Discovery: the server root's list of services and SAP Gateway's V2 and V4 catalog services.

SAP clients (the Cloud SDK's service discovery, Fiori tools, pyodata pointed at the catalog) list
the services of a system through ``/sap/opu/odata/IWFND/CATALOGSERVICE;v=2/ServiceCollection``;
this is that entity set for the V2 services the store serves, with a ``$metadata`` that declares
only what the answer holds. V4 services are published in service groups, which SAP Gateway lists at
``/sap/opu/odata4/iwfnd/config/default/iwfnd/catalog/0002/ServiceGroups``
(``$expand=DefaultSystem($expand=Services)``, what SAP's Fiori tools send: ``@sap-ux/axios-extension``'s
``V4CatalogService``); here each V4 service is a group of its own, named after its service binding.
``GET /`` lists every service (V2 and V4) with its path.
"""

from __future__ import annotations

import re
from urllib.parse import parse_qsl
from xml.sax.saxutils import escape

from processkg.errors import ServeHTTPError

CATALOG = "/sap/opu/odata/IWFND/CATALOGSERVICE;v=2"
CATALOG_V4 = "/sap/opu/odata4/iwfnd/config/default/iwfnd/catalog/0002"
NAMESPACE = "CATALOGSERVICE"
NAMESPACE_V4 = "com.sap.gateway.default.iwfnd.catalog.v0002"
FIELDS = ("ID", "Description", "Title", "TechnicalServiceName", "TechnicalServiceVersion", "ServiceUrl", "MetadataUrl")
GROUP_FIELDS = ("GroupId", "Description")
SYSTEM_FIELDS = ("SystemAlias", "Description")
SERVICE_FIELDS = ("RepositoryId", "ServiceId", "ServiceVersion", "ServiceAlias", "Description", "ServiceUrl")
#: The ``$expand`` values of ``ServiceGroups`` (``Services()`` is how the Fiori tools write it).
EXPANDS = {"": 0, "DefaultSystem": 1, "DefaultSystem($expand=Services)": 2, "DefaultSystem($expand=Services())": 2}
V4_OPTIONS = ("$expand", "$count", "$top", "$skip", "$format", "sap-client", "sap-language")
SRVD = re.compile(r"^/sap/opu/odata4/sap/([^/]+)/(srvd_a2x|srvd)/sap/([^/]+)/(\d{4})/$")


def is_catalog(path: str) -> bool:
    return any(path == root or path.startswith(root + "/") for root in (CATALOG, CATALOG_V4))


def version_of(path: str) -> str:
    """The OData version a catalog path answers in."""
    return "4.0" if path == CATALOG_V4 or path.startswith(CATALOG_V4 + "/") else "2.0"


def root_page(services: dict[str, tuple[str, str]], origin: str) -> dict[str, object]:
    """``GET /``: every service by name with its version and URL, and where the catalog is.
    ``services`` maps a service's root path to (name, OData version)."""
    listed = [
        {"service": name, "version": version, "url": origin + root, "metadata": f"{origin}{root}$metadata"}
        for root, (name, version) in sorted(services.items(), key=lambda item: item[1][0])
    ]
    return {
        "services": listed,
        "catalog": f"{origin}{CATALOG}/ServiceCollection",
        "catalog_v4": f"{origin}{CATALOG_V4}/ServiceGroups?$expand=DefaultSystem($expand=Services)",
    }


def answer(path: str, query: str, services: dict[str, tuple[str, str]], origin: str) -> tuple[str, object]:
    """The catalog's answer to ``GET path?query``: ("xml", text) for ``$metadata``, ("json", body)
    otherwise; 404 for anything else. The V2 catalog takes no query options (they are ignored)."""
    if version_of(path) == "4.0":
        return answer_v4(path[len(CATALOG_V4) :].strip("/"), query, services)
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


def answer_v4(rest: str, query: str, services: dict[str, tuple[str, str]]) -> tuple[str, object]:
    """The V4 catalog: its service document, ``$metadata`` and ``ServiceGroups`` (with ``$expand``,
    ``$count``, ``$top`` and ``$skip``)."""
    if rest == "":
        return "json", {"@odata.context": "$metadata", "value": [{"name": "ServiceGroups", "url": "ServiceGroups"}]}
    if rest == "$metadata":
        return "xml", METADATA_V4
    if rest != "ServiceGroups":
        raise ServeHTTPError(404, "not-found", f"the V4 catalog service has ServiceGroups and $metadata, not {rest}")
    options = dict(parse_qsl(query, keep_blank_values=True))
    unknown = sorted(set(options) - set(V4_OPTIONS))
    if unknown:
        raise ServeHTTPError(
            400, "bad-query", f"ServiceGroups takes {', '.join(V4_OPTIONS[:4])}; not {', '.join(unknown)}"
        )
    depth = EXPANDS.get(options.get("$expand", "").replace(" ", ""))
    if depth is None:
        raise ServeHTTPError(
            400,
            "bad-query",
            f"$expand of ServiceGroups is DefaultSystem or DefaultSystem($expand=Services), not {options['$expand']}",
        )
    groups = service_groups(services, depth)
    skip, top = _count(options, "$skip", 0), _count(options, "$top", len(groups))
    expanded = {0: "", 1: "(DefaultSystem())", 2: "(DefaultSystem(Services()))"}[depth]
    body: dict[str, object] = {"@odata.context": f"$metadata#ServiceGroups{expanded}"}
    if options.get("$count", "false").lower() == "true":
        body["@odata.count"] = len(groups)
    body["value"] = groups[skip : skip + top]
    return "json", body


def service_groups(services: dict[str, tuple[str, str]], depth: int) -> list[dict[str, object]]:
    """One service group per V4 service, ordered by ``GroupId``; ``depth`` 1 adds the default system,
    2 its services as well."""
    groups = []
    for root, (name, version) in services.items():
        if not version.startswith("4"):
            continue
        m = SRVD.match(root)
        group, repository, service_id, service_version = (
            (m.group(1).upper(), m.group(2).upper(), m.group(3).upper(), m.group(4))
            if m
            else (name.upper(), "DEFAULT", name, "0001")
        )
        entry: dict[str, object] = {"GroupId": group, "Description": f"Service group of {name}"}
        if depth:
            system: dict[str, object] = {"SystemAlias": "LOCAL", "Description": "Local System Alias"}
            if depth > 1:
                system["Services"] = [
                    dict(zip(SERVICE_FIELDS, (repository, service_id, service_version, "", name, root), strict=True))
                ]
            entry["DefaultSystem"] = system
        groups.append(entry)
    return sorted(groups, key=lambda g: str(g["GroupId"]))


def _count(options: dict[str, str], name: str, default: int) -> int:
    value = options.get(name)
    if value is None:
        return default
    if not value.isdigit():
        raise ServeHTTPError(400, "bad-query", f"{name} is a whole number, not {value!r}")
    return int(value)


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


def _metadata_v4() -> str:
    def props(names: tuple[str, ...], key: tuple[str, ...]) -> str:
        refs = "".join(f'<PropertyRef Name="{n}"/>' for n in key)
        fields = "".join(
            f'<Property Name="{n}" Type="Edm.String" Nullable="{"false" if n in key else "true"}"/>' for n in names
        )
        return f"<Key>{refs}</Key>{fields}"

    ns = NAMESPACE_V4
    return (
        '<?xml version="1.0" encoding="utf-8"?>'
        '<edmx:Edmx Version="4.0" xmlns:edmx="http://docs.oasis-open.org/odata/ns/edmx">'
        "<edmx:DataServices>"
        f'<Schema Namespace="{ns}" xmlns="http://docs.oasis-open.org/odata/ns/edm">'
        f'<EntityType Name="ServiceGroupType">{props(GROUP_FIELDS, ("GroupId",))}'
        f'<NavigationProperty Name="DefaultSystem" Type="{ns}.SystemType" ContainsTarget="true"/></EntityType>'
        f'<EntityType Name="SystemType">{props(SYSTEM_FIELDS, ("SystemAlias",))}'
        f'<NavigationProperty Name="Services" Type="Collection({ns}.ServiceType)" ContainsTarget="true"/></EntityType>'
        f'<EntityType Name="ServiceType">{props(SERVICE_FIELDS, ("RepositoryId", "ServiceId", "ServiceVersion"))}</EntityType>'
        f'<EntityContainer Name="Container"><EntitySet Name="ServiceGroups" EntityType="{ns}.ServiceGroupType"/>'
        "</EntityContainer></Schema></edmx:DataServices></edmx:Edmx>"
    )


METADATA = _metadata()
METADATA_V4 = _metadata_v4()
