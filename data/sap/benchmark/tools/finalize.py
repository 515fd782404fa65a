"""Finalize and validate the SAP retrieval benchmark (``data/sap/benchmark/queries.jsonl``).

The queries, their types, gold entity sets, anchors and processes are written by hand in
``queries.jsonl``. This script computes everything else in the file and checks all of it:

* ``alternatives`` of every gold item, from the table of duplicate services below
  (``EQUIVALENT``): the same business object exposed by two services;
* ``lexical_overlap`` of every query (see ``overlap``);
* ``split``: stratified by type; within each type the ids are sorted by sha256(id) and
  alternately assigned train, test, train, ...

and validates:

* the schema (ids ``sap-NNN``, unique; the four types; required fields per type);
* every gold item, alternative and anchor names a service (metadata file stem) and an
  EntitySet that exist in ``../shared/data/odata/s4-a2x`` (read with lxml);
* navigation queries: every gold set other than the anchor is reached from the anchor by a
  path of one or two navigation properties in the anchor's service (V2 association sets,
  V4 navigation property bindings);
* process-chain queries: no gold item is the anchor; every gold item (or an alternative)
  is read or written by an activity that follows, by ``bpmn:next+``, an activity of the
  named process that uses the anchor; overlap <= 0.34;
* workflow queries: 2 to 4 gold items, each used by an activity of the named process;
* single queries: exactly one gold item.

The process checks run SPARQL on a graph built in memory with ``processkg.build.pipeline`` from the
A2X metadata, ``data/sap/processes`` and ``data/sap/mapping.yaml``.

Usage (from the repository root)::

    .venv/bin/python data/sap/benchmark/tools/finalize.py          # rewrite the file, report
    .venv/bin/python data/sap/benchmark/tools/finalize.py --check  # exit 1 if stale or invalid

The output is deterministic: the same input always gives the same bytes.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import re
import statistics
import sys
from collections import Counter, defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[4]
BENCH = ROOT / "data" / "sap" / "benchmark"
QUERIES = BENCH / "queries.jsonl"
METADATA = ROOT.parent / "shared" / "data" / "odata" / "s4-a2x"
PROCESSES = ROOT / "data" / "sap" / "processes"
MAPPING = ROOT / "data" / "sap" / "mapping.yaml"

TYPES = ("single", "navigation", "process-chain", "workflow")
MAX_CHAIN_OVERLAP = 0.34
KEY_ORDER = ("id", "query", "type", "split", "gold", "lexical_overlap", "process", "anchor")

# ---------------------------------------------------------------- duplicates

SO_V2, SO_V4 = "API_SALES_ORDER_SRV", "CE_SALESORDER_0001"
PO_V2, PO_V4 = "API_PURCHASEORDER_PROCESS_SRV", "CE_PURCHASEORDER_0001"
BD_V2, BD_V4 = "API_BILLING_DOCUMENT_SRV", "sap-s4-CE_BILLINGDOCUMENT_0001-v1"
BP, BP_OP = "API_BUSINESS_PARTNER", "OP_API_BUSINESS_PARTNER_SRV"
JE = "API_JOURNALENTRYITEMBASIC_SRV"

#: Groups of (service, entity set) that expose the same business object. Every entity set
#: of API_BUSINESS_PARTNER that OP_API_BUSINESS_PARTNER_SRV also has is added at load time.
EQUIVALENT = [
    [(SO_V2, "A_SalesOrder"), (SO_V4, "SalesOrder")],
    [(SO_V2, "A_SalesOrderItem"), (SO_V4, "SalesOrderItem")],
    [(SO_V2, "A_SalesOrderScheduleLine"), (SO_V4, "SalesOrderScheduleLine")],
    [(SO_V2, "A_SalesOrderHeaderPartner"), (SO_V4, "SalesOrderPartner")],
    [(SO_V2, "A_SalesOrderItemPartner"), (SO_V4, "SalesOrderItemPartner")],
    [(SO_V2, "A_SalesOrderHeaderPrElement"), (SO_V4, "SalesOrderPricingElement")],
    [(SO_V2, "A_SalesOrderItemPrElement"), (SO_V4, "SalesOrderItemPricingElement")],
    [(SO_V2, "A_SalesOrderText"), (SO_V4, "SalesOrderText")],
    [(SO_V2, "A_SalesOrderItemText"), (SO_V4, "SalesOrderItemText")],
    [(PO_V2, "A_PurchaseOrder"), (PO_V4, "PurchaseOrder")],
    [(PO_V2, "A_PurchaseOrderItem"), (PO_V4, "PurchaseOrderItem")],
    [(PO_V2, "A_PurOrdPricingElement"), (PO_V4, "PurOrderItemPricingElement")],
    [(PO_V2, "A_PurchaseOrderScheduleLine"), (PO_V4, "PurchaseOrderScheduleLine")],
    [(PO_V2, "A_PurOrdAccountAssignment"), (PO_V4, "PurchaseOrderAccountAssignment")],
    [(PO_V2, "A_PurchaseOrderNote"), (PO_V4, "PurchaseOrderNote")],
    [(PO_V2, "A_PurchaseOrderItemNote"), (PO_V4, "PurchaseOrderItemNote")],
    [(PO_V2, "A_POSubcontractingComponent"), (PO_V4, "POSubcontractingComponent")],
    [(BD_V2, "A_BillingDocument"), (BD_V4, "BillingDocument")],
    [(BD_V2, "A_BillingDocumentItem"), (BD_V4, "BillingDocumentItem")],
    [(BD_V2, "A_BillingDocumentPartner"), (BD_V4, "BillingDocumentPartner")],
    [(BD_V2, "A_BillingDocumentItemPartner"), (BD_V4, "BillingDocumentItemPartner")],
    [(BD_V2, "A_BillingDocumentText"), (BD_V4, "BillingDocumentText")],
    [(BD_V2, "A_BillingDocumentItemText"), (BD_V4, "BillingDocumentItemText")],
    [("API_COMPANYCODE_SRV", "A_CompanyCode"), (JE, "A_CompanyCode")],
    [("API_COSTCENTER_SRV", "A_CostCenter"), (JE, "A_CostCenter")],
    [("API_GLACCOUNTINCHARTOFACCOUNTS_SRV", "A_GLAccountInChartOfAccounts"), (JE, "A_GLAccountInChartOfAccounts")],
]

# ---------------------------------------------------------------- metadata (lxml)

SAP_NS = "http://www.sap.com/Protocols/SAPData"
COMMON = "com.sap.vocabularies.Common.v1"


def _local(tag) -> str:
    return tag.rsplit("}", 1)[-1] if isinstance(tag, str) else ""


class Service:
    """Entity sets, their labels and navigation targets of one metadata file."""

    def __init__(self, name: str, path: Path):
        from lxml import etree

        self.name = name
        root = etree.parse(str(path), etree.XMLParser(huge_tree=True, resolve_entities=False)).getroot()
        self.version = root.get("Version", "")
        self.aliases = {}  # alias or namespace -> namespace
        for inc in root.iter():
            if _local(inc.tag) == "Include" and inc.get("Namespace"):
                self.aliases[inc.get("Alias") or inc.get("Namespace")] = inc.get("Namespace")
                self.aliases[inc.get("Namespace")] = inc.get("Namespace")
        self.types = {}  # qualified type name -> element
        self.sets = {}  # set name -> qualified type name
        self.set_elements = {}
        self.containers = []
        self.assoc_sets = defaultdict(list)  # association -> [[(role, set), ...], ...]
        self.annotations = defaultdict(list)  # resolved target -> [Annotation elements]
        for schema in (e for e in root.iter() if _local(e.tag) == "Schema"):
            ns = schema.get("Namespace")
            self.aliases[ns] = ns
            if schema.get("Alias"):
                self.aliases[schema.get("Alias")] = ns
        for schema in (e for e in root.iter() if _local(e.tag) == "Schema"):
            ns = schema.get("Namespace")
            for child in schema:
                kind = _local(child.tag)
                if kind == "EntityType":
                    self.types[f"{ns}.{child.get('Name')}"] = child
                elif kind == "EntityContainer":
                    self._container(ns, child)
                elif kind == "Annotations":
                    self.annotations[self._target(child.get("Target", ""))].extend(
                        a for a in child if _local(a.tag) == "Annotation"
                    )

    def _qualify(self, name: str) -> str:
        if "." not in name:
            return name
        prefix, local = name.rsplit(".", 1)
        return f"{self.aliases.get(prefix, prefix)}.{local}"

    def _target(self, target: str) -> str:
        path = target.split("/")
        return "/".join([self._qualify(path[0].split("(")[0])] + path[1:])

    def _container(self, ns: str, container) -> None:
        cname = f"{ns}.{container.get('Name')}"
        self.containers.append(cname)
        for child in container:
            kind = _local(child.tag)
            if kind == "EntitySet":
                name = child.get("Name")
                self.sets[name] = self._qualify(child.get("EntityType", ""))
                self.set_elements[name] = (cname, child)
            elif kind == "AssociationSet":
                ends = [(end.get("Role"), end.get("EntitySet")) for end in child if _local(end.tag) == "End"]
                self.assoc_sets[self._qualify(child.get("Association", ""))].append(ends)

    # -------------------------------------------------------- labels

    def _annotation_label(self, target: str) -> str | None:
        for ann in self.annotations.get(target, []):
            term = ann.get("Term", "")
            if self._qualify(term) == f"{COMMON}.Label" and ann.get("String"):
                return ann.get("String")
        return None

    def _inline_label(self, element) -> str | None:
        for ann in element:
            if _local(ann.tag) == "Annotation" and self._qualify(ann.get("Term", "")) == f"{COMMON}.Label":
                if ann.get("String"):
                    return ann.get("String")
        return None

    def label(self, set_name: str) -> str:
        """sap:label or Common.Label of the entity set, else of its entity type, else ''."""
        cname, element = self.set_elements[set_name]
        type_name = self.sets[set_name]
        type_el = self.types.get(type_name)
        candidates = [
            element.get(f"{{{SAP_NS}}}label"),
            self._inline_label(element),
            self._annotation_label(f"{cname}/{set_name}"),
        ]
        if type_el is not None:
            candidates += [type_el.get(f"{{{SAP_NS}}}label"), self._inline_label(type_el)]
        candidates.append(self._annotation_label(type_name))
        return next((c for c in candidates if c), "")

    # -------------------------------------------------------- navigation

    def _type_chain(self, type_name: str):
        seen = set()
        while type_name in self.types and type_name not in seen:
            seen.add(type_name)
            yield self.types[type_name]
            base = self.types[type_name].get("BaseType")
            type_name = self._qualify(base) if base else ""

    def navigation(self, set_name: str) -> set:
        """Entity sets reached from ``set_name`` by one navigation property."""
        targets = set()
        _, element = self.set_elements[set_name]
        for binding in element:
            if _local(binding.tag) == "NavigationPropertyBinding":
                targets.add(binding.get("Target", "").split("/")[-1])
        for type_el in self._type_chain(self.sets[set_name]):
            for nav in type_el:
                if _local(nav.tag) != "NavigationProperty" or not nav.get("Relationship"):
                    continue
                for ends in self.assoc_sets.get(self._qualify(nav.get("Relationship")), []):
                    roles = dict(ends)
                    if roles.get(nav.get("FromRole")) == set_name and nav.get("ToRole") in roles:
                        targets.add(roles[nav.get("ToRole")])
        return {t for t in targets if t in self.sets}


class Metadata:
    def __init__(self, folder: Path):
        self.services = {}
        for path in sorted(folder.iterdir()):
            if path.suffix.lower() in (".edmx", ".xml") and path.is_file():
                self.services[path.stem] = Service(path.stem, path)

    def has(self, service: str, entity_set: str) -> bool:
        return service in self.services and entity_set in self.services[service].sets

    def label(self, service: str, entity_set: str) -> str:
        return self.services[service].label(entity_set)

    def reachable(self, service: str, entity_set: str, hops: int = 2) -> set:
        svc, frontier, seen = self.services[service], {entity_set}, set()
        for _ in range(hops):
            frontier = {t for s in frontier for t in svc.navigation(s)} - seen - {entity_set}
            seen |= frontier
        return seen

    def equivalents(self) -> dict:
        groups = [list(g) for g in EQUIVALENT]
        if BP in self.services and BP_OP in self.services:
            shared = sorted(set(self.services[BP].sets) & set(self.services[BP_OP].sets))
            groups += [[(BP, s), (BP_OP, s)] for s in shared]
        table = {}
        for group in groups:
            for member in group:
                table[member] = [m for m in group if m != member]
        return table


# ---------------------------------------------------------------- lexical overlap

STOP = {"a", "an", "api", "srv", "of", "the", "and", "in", "for", "to", "at", "by", "on", "with", "is", "using"}
_CHUNK = re.compile(r"[A-Za-z0-9]+")
_PART = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|[0-9]+")


def stem(word: str) -> str:
    """Strip a plural: -ies -> -y, else a final -s (not -ss)."""
    if len(word) > 4 and word.endswith("ies"):
        return word[:-3] + "y"
    if len(word) > 3 and word.endswith("s") and not word.endswith("ss"):
        return word[:-1]
    return word


def tokens(text: str) -> list:
    """Words of ``text``: split at non-alphanumerics and CamelCase, lower-cased, stemmed."""
    out = []
    for chunk in _CHUNK.findall(text):
        for part in _PART.findall(chunk):
            out.append(stem(part.lower()))
    return out


def name_tokens(entity_set: str, label: str) -> set:
    """Content words of an entity set: its name and its label, without a/api/srv and stop words,
    digits and single letters."""
    words = tokens(entity_set) + tokens(label)
    return {w for w in words if len(w) > 1 and not w.isdigit() and w not in STOP}


def overlap(query: str, gold: list, label) -> float:
    """Mean over gold items of the fraction of the item's name tokens found in the query."""
    q = set(tokens(query))
    fractions = []
    for item in gold:
        names = name_tokens(item["entity_set"], label(item["service"], item["entity_set"]))
        fractions.append(len(names & q) / len(names) if names else 0.0)
    return round(statistics.mean(fractions), 3) if fractions else 0.0


# ---------------------------------------------------------------- split


def assign_splits(records: list) -> None:
    by_type = defaultdict(list)
    for r in records:
        by_type[r["type"]].append(r)
    for group in by_type.values():
        group.sort(key=lambda r: hashlib.sha256(r["id"].encode("utf-8")).hexdigest())
        for i, r in enumerate(group):
            r["split"] = "train" if i % 2 == 0 else "test"


# ---------------------------------------------------------------- processes (built graph)


class Processes:
    """Activities, their entity sets and the bpmn:next closure, from a graph built in memory."""

    def __init__(self, metadata: Path = METADATA):
        from pyoxigraph import RdfFormat, Store

        sys.path.insert(0, str(ROOT / "src"))
        from processkg.build.pipeline import BuildOptions, build_store
        from processkg.vocab import PREFIXES

        report = build_store(BuildOptions(odata=[metadata], bpmn=[PROCESSES], mapping=MAPPING, on_error="fail"))
        store = Store()
        store.bulk_load(report.turtle, format=RdfFormat.TURTLE)

        def select(q):
            res = store.query(q, prefixes=PREFIXES)
            names = [v.value for v in res.variables]
            return [tuple(row[n].value for n in names) for row in res]

        self.uses = defaultdict(set)  # activity IRI -> {(service, set)}
        self.process_of = {}  # activity IRI -> process id
        for a, pid in select("SELECT ?a ?pid WHERE { ?a a bpmn:Activity ; bpmn:process/bpmn:elementId ?pid }"):
            self.process_of[a] = pid
        for a, svc, es in select("""SELECT ?a ?svc ?set WHERE { ?a a bpmn:Activity ; uses:entitySet ?e .
                ?e kg:name ?set . ?s kg:entityContainer/kg:entitySet ?e ; kg:serviceName ?svc }"""):
            self.uses[a].add((svc, es))
        nxt = defaultdict(set)
        for a, b in select("SELECT ?a ?b WHERE { ?a bpmn:next ?b }"):
            nxt[a].add(b)
        self.after = {}
        for a in self.process_of:
            seen, stack = set(), list(nxt[a])
            while stack:
                b = stack.pop()
                if b not in seen:
                    seen.add(b)
                    stack.extend(nxt[b])
            self.after[a] = seen
        self.ids = set(self.process_of.values())

    def activities(self, process: str, item: tuple) -> list:
        return [a for a, pid in self.process_of.items() if pid == process and item in self.uses[a]]

    def downstream(self, process: str, anchor: tuple) -> set:
        """(service, set) pairs used by activities after any activity of ``process`` using ``anchor``."""
        return {u for a in self.activities(process, anchor) for b in self.after[a] for u in self.uses[b]}

    def used_in(self, process: str) -> set:
        return {u for a, pid in self.process_of.items() if pid == process for u in self.uses[a]}


# ---------------------------------------------------------------- normalize and validate


def _ref(obj) -> tuple:
    return (obj.get("service", ""), obj.get("entity_set", "")) if isinstance(obj, dict) else ("", "")


def normalize(records: list, meta: Metadata) -> list:
    """Fill alternatives, lexical_overlap and split; return records in canonical key order."""
    equiv = meta.equivalents()
    out = []
    for r in records:
        gold = []
        for g in r.get("gold", []):
            ref = _ref(g)
            alts = [{"service": s, "entity_set": e} for s, e in equiv.get(ref, [])]
            gold.append({"service": ref[0], "entity_set": ref[1], "alternatives": alts})
        r = dict(r, gold=gold)
        ok = all(meta.has(g["service"], g["entity_set"]) for g in gold)
        r["lexical_overlap"] = overlap(r.get("query", ""), gold, meta.label) if ok else None
        r.setdefault("process", None)
        r.setdefault("anchor", None)
        out.append(r)
    assign_splits(out)
    return [{k: r.get(k) for k in KEY_ORDER} | {k: v for k, v in r.items() if k not in KEY_ORDER} for r in out]


def validate(records: list, meta: Metadata, procs: Processes | None) -> list:
    errors = []
    seen = set()
    for r in records:
        rid = r.get("id", "?")

        def err(msg):
            errors.append(f"{rid}: {msg}")

        if not re.fullmatch(r"sap-\d{3}", str(rid)):
            err("id must look like sap-NNN")
        if rid in seen:
            err("duplicate id")
        seen.add(rid)
        if not str(r.get("query", "")).strip():
            err("empty query")
        kind = r.get("type")
        if kind not in TYPES:
            err(f"unknown type {kind!r}")
            continue
        gold = r.get("gold") or []
        if not gold:
            err("no gold")
        refs = [_ref(g) for g in gold]
        if len(set(refs)) != len(refs):
            err("a gold item is listed twice")
        for g in gold:
            for ref in [_ref(g)] + [_ref(a) for a in g.get("alternatives", [])]:
                if not meta.has(*ref):
                    err(f"{ref[0]}/{ref[1]} is not an entity set in the metadata")
        anchor = _ref(r["anchor"]) if r.get("anchor") else None
        if anchor and not meta.has(*anchor):
            err(f"anchor {anchor[0]}/{anchor[1]} is not an entity set in the metadata")
        process = r.get("process")
        if procs and process and process not in procs.ids:
            err(f"unknown process {process}")
        groups = [{_ref(g)} | {_ref(a) for a in g.get("alternatives", [])} for g in gold]
        if kind == "single":
            if len(gold) != 1:
                err("a single-entity query has exactly one gold item")
        elif kind == "navigation":
            if not anchor:
                err("a navigation query needs an anchor")
            elif meta.has(*anchor):
                reach = meta.reachable(*anchor)
                for ref in refs:
                    if ref != anchor and (ref[0] != anchor[0] or ref[1] not in reach):
                        err(f"{ref[1]} is not within two navigation steps of {anchor[1]}")
                if all(ref == anchor for ref in refs):
                    err("a navigation query needs a gold set other than the anchor")
        elif kind == "process-chain":
            if not anchor or not process:
                err("a process-chain query needs an anchor and a process")
            else:
                if any(anchor in grp for grp in groups):
                    err("the anchor must not be gold in a process-chain query")
                if procs:
                    if not procs.activities(process, anchor):
                        err(f"no activity of {process} uses the anchor {anchor[1]}")
                    down = procs.downstream(process, anchor)
                    for ref, grp in zip(refs, groups):
                        if not grp & down:
                            err(f"{ref[1]} is not downstream (bpmn:next+) of {anchor[1]} in {process}")
            if r.get("lexical_overlap") is not None and r["lexical_overlap"] > MAX_CHAIN_OVERLAP:
                err(f"overlap {r['lexical_overlap']} > {MAX_CHAIN_OVERLAP}")
        elif kind == "workflow":
            if not process:
                err("a workflow query needs a process")
            if not 2 <= len(gold) <= 4:
                err("a workflow query has 2 to 4 gold items")
            if procs and process:
                used = procs.used_in(process)
                for ref, grp in zip(refs, groups):
                    if not grp & used:
                        err(f"{ref[1]} is used by no activity of {process}")
        if r.get("split") not in ("train", "test"):
            err("split must be train or test")
    return errors


# ---------------------------------------------------------------- report


def report(records: list, meta: Metadata, procs: Processes | None) -> str:
    lines = []
    counts = Counter((r["type"], r["split"]) for r in records)
    lines.append(f"{len(records)} queries")
    lines.append(f"{'type':<14} {'train':>5} {'test':>5} {'all':>5}")
    for t in TYPES:
        tr, te = counts[(t, "train")], counts[(t, "test")]
        lines.append(f"{t:<14} {tr:>5} {te:>5} {tr + te:>5}")
    tr = sum(v for (t, s), v in counts.items() if s == "train")
    lines.append(f"{'all':<14} {tr:>5} {len(records) - tr:>5} {len(records):>5}")
    lines.append("")
    lines.append("lexical overlap per type: n mean median min max | =0 (0,.25] (.25,.5] (.5,.75] (.75,1]")
    for t in TYPES + ("all",):
        vals = [r["lexical_overlap"] for r in records if t in ("all", r["type"])]
        if not vals:
            continue
        bins = [
            sum(1 for v in vals if v == 0),
            sum(1 for v in vals if 0 < v <= 0.25),
            sum(1 for v in vals if 0.25 < v <= 0.5),
            sum(1 for v in vals if 0.5 < v <= 0.75),
            sum(1 for v in vals if v > 0.75),
        ]
        lines.append(
            f"{t:<14} {len(vals):>3} {statistics.mean(vals):.3f} {statistics.median(vals):.3f} "
            f"{min(vals):.3f} {max(vals):.3f} | " + " ".join(f"{b:>4}" for b in bins)
        )
    gold_counts = Counter(len(r["gold"]) for r in records)
    lines.append("")
    lines.append("gold items per query: " + ", ".join(f"{k}: {v}" for k, v in sorted(gold_counts.items())))
    with_alt = sum(1 for r in records if any(g["alternatives"] for g in r["gold"]))
    lines.append(f"queries with an alternative service for some gold item: {with_alt}")
    services = {g["service"] for r in records for g in r["gold"]}
    services_alt = services | {a["service"] for r in records for g in r["gold"] for a in g["alternatives"]}
    lines.append(
        f"services in gold: {len(services)} of {len(meta.services)} ({len(services_alt)} counting alternatives)"
    )
    missing = sorted(set(meta.services) - services_alt)
    if missing:
        lines.append("  not covered: " + ", ".join(missing))
    sets = {(g["service"], g["entity_set"]) for r in records for g in r["gold"]}
    lines.append(f"distinct gold entity sets: {len(sets)}")
    per_process = Counter(r["process"] for r in records if r.get("process"))
    lines.append(f"processes named: {len(per_process)}" + (f" of {len(procs.ids)}" if procs else ""))
    for p, n in sorted(per_process.items()):
        by = Counter(r["type"] for r in records if r.get("process") == p)
        lines.append(f"  {p:<42} {n:>3}  " + ", ".join(f"{k} {v}" for k, v in sorted(by.items())))
    if procs:
        for p in sorted(procs.ids - set(per_process)):
            lines.append(f"  {p:<42}   0")
    return "\n".join(lines)


def dump(records: list) -> str:
    return "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--queries", type=Path, default=QUERIES)
    ap.add_argument("--metadata", type=Path, default=METADATA)
    ap.add_argument("--check", action="store_true", help="do not write; exit 1 if the file is stale or invalid")
    ap.add_argument("--no-process", action="store_true", help="skip the checks that build the process graph")
    ap.add_argument("--quiet", action="store_true")
    args = ap.parse_args(argv)

    if not args.metadata.is_dir():
        print(f"metadata folder {args.metadata} not found", file=sys.stderr)
        return 2
    text = args.queries.read_text(encoding="utf-8")
    records = []
    for number, line in enumerate(text.splitlines(), 1):
        if line.strip():
            try:
                records.append(json.loads(line))
            except json.JSONDecodeError as exc:
                print(f"{args.queries}:{number}: not JSON ({exc.msg})", file=sys.stderr)
                return 1
    meta = Metadata(args.metadata)
    records = normalize(records, meta)
    procs = None if args.no_process else Processes(args.metadata)
    errors = validate(records, meta, procs)
    for e in errors:
        print("error:", e, file=sys.stderr)
    new = dump(records)
    if args.check:
        if new != text:
            print(f"{args.queries} is stale: run finalize.py", file=sys.stderr)
            return 1
    elif new != text:
        args.queries.write_text(new, encoding="utf-8")
    if not args.quiet:
        print(report(records, meta, procs))
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
