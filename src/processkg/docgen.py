"""``kg docs``: generate the reference pages of ``docs/`` so they cannot drift from their sources.

Three pages, each rendered by a jinja2 template in ``templates/docs/``:

* ``ontology-reference.md`` from ``ontology/processkg.ttl``: every class and property with its
  kind, domain and range, meaning and the specification sections it cites. The grouping into
  sections follows the ``# --- Section: kind`` comments of the TTL file; everything else
  (labels, comments, domains, ranges, links) is read from the RDF itself, with rdflib.
* ``cli.md`` from the click command tree of ``kg``: usage, help text, options and arguments.
* ``queries.md`` from the comment headers of ``queries/*.rq``: what each library query answers,
  its parameters, its result columns and an example.

A test regenerates the pages and compares them with the committed files, so a change to the
ontology, a command or a query that is not followed by ``kg docs --out docs/`` fails the suite.
Output is deterministic: no dates, no terminal widths, sorted where the source has no order.
"""

from __future__ import annotations

import inspect
import re
from dataclasses import dataclass, field
from pathlib import Path

import click
import rdflib
from jinja2 import Environment, FileSystemLoader, StrictUndefined
from rdflib import OWL, RDF, RDFS, BNode, URIRef
from rdflib.collection import Collection
from rdflib.term import Node

from processkg.aliases import JSONObject, JSONValue
from processkg.assets import internal_queries_dir, ontology_path, queries_dir, templates_dir
from processkg.graph.store import write_atomic

PAGES = ("ontology-reference.md", "cli.md", "queries.md")
PROGRAM = "kg"
TEMPLATES = templates_dir("docs")


# ---------------------------------------------------------------- jinja2


def _cell(value: str | int | float | None) -> str:
    """Text that is safe inside a Markdown table cell: one line, pipes escaped."""
    text = "" if value is None else str(value)
    return re.sub(r"\s*\n\s*", " ", text).replace("|", "\\|").strip()


def _code(value: str) -> str:
    """Inline code that may itself contain backticks."""
    text = str(value)
    fence = "``" if "`" in text else "`"
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{fence}{pad}{text}{pad}{fence}"


def _environment() -> Environment:

    env = Environment(
        loader=FileSystemLoader(str(TEMPLATES)),
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
        undefined=StrictUndefined,
        autoescape=False,
    )
    env.filters["cell"] = _cell
    env.filters["code"] = _code
    env.filters["sentence"] = lambda text: str(text)[:1].upper() + str(text)[1:]
    return env


def _render(template: str, **context: JSONValue) -> str:
    text = _environment().get_template(template).render(**context)
    return re.sub(r"\n{3,}", "\n\n", text).rstrip("\n") + "\n"


# ---------------------------------------------------------------- ontology reference

_KINDS = {
    "http://www.w3.org/2002/07/owl#Class": "class",
    "http://www.w3.org/2002/07/owl#ObjectProperty": "object property",
    "http://www.w3.org/2002/07/owl#DatatypeProperty": "datatype property",
}
_SECTION = re.compile(r"^# --- (?P<title>.+?)(?::\s*(?P<kind>classes|object properties|datatype properties))?\s*$")
_NAMESPACE = re.compile(r"^# (?P<prefix>[a-z]+): (?P<title>.+?)\s*$")
_SUBJECT = re.compile(r"^(?P<curie>[a-z]+:[A-Za-z_][\w-]*)\s*$")
_TITLES = (
    (re.compile(r"^OData CSDL XML 4\.01, section '(.+)'$"), r"CSDL: \1"),
    (re.compile(r"^OData Version 2\.0 overview \((.+)\)$"), r"OData V2 (\1)"),
    (re.compile(r"^OData Version 2\.0 overview$"), "OData V2"),
    (re.compile(r"^SAP Annotations for OData Version 2\.0, (.+)$"), r"SAP V2: \1"),
)


@dataclass
class Term:
    curie: str
    iri: str
    kind: str
    label: str
    meaning: str
    specs: list[tuple[str, list[str]]]  # [(title, [url, ...])]
    domain: str = ""
    range: str = ""
    notes: list[str] = field(default_factory=list)  # subclass of, subproperty of, inverse of


@dataclass
class Section:
    title: str
    terms: list[Term] = field(default_factory=list)


@dataclass
class Namespace:
    prefix: str
    iri: str
    title: str
    sections: list[Section] = field(default_factory=list)


def _short_title(title: str) -> str:
    for pattern, replacement in _TITLES:
        if pattern.match(title):
            return pattern.sub(replacement, title)
    return title


def split_comment(comment: str, see_also: list[str]) -> tuple[str, list[tuple[str, list[str]]]]:
    """``"Meaning. See Title: url | Title: url ; url."`` -> (meaning, [(short title, [urls])]).

    A comment without a "See" part cites its ``rdfs:seeAlso`` links, titled by the URL.
    """
    match = re.search(r"\s+See (?=.*https?://)(.*)$", comment, re.S)
    if not match:
        return comment.strip(), [(url, [url]) for url in see_also]
    meaning = comment[: match.start()].strip()
    specs: list[tuple[str, list[str]]] = []
    for ref in match.group(1).rstrip().split(" | "):
        ref = ref.strip()
        parts = re.match(r"(.*?):\s+(https?://.*)$", ref, re.S)
        if not parts:
            specs.append((ref.rstrip("."), []))
            continue
        urls = [u.strip() for u in parts.group(2).split(" ; ")]
        urls[-1] = urls[-1].rstrip(".")
        specs.append((_short_title(parts.group(1).strip()), urls))
    return meaning, specs


def _sections_of(ttl_text: str) -> tuple[dict[str, tuple[str, str]], list[tuple[str, str]]]:
    """From the comments of the TTL: {curie: (namespace prefix, section title)}, namespace titles."""
    where: dict[str, tuple[str, str]] = {}
    namespaces: list[tuple[str, str]] = []
    prefix, section = "", ""
    lines = ttl_text.splitlines()
    for i, line in enumerate(lines):
        if line.startswith("####") and i + 1 < len(lines):
            head = _NAMESPACE.match(lines[i + 1])
            if head:
                prefix, section = head.group("prefix"), ""
                namespaces.append((prefix, head.group("title")))
            continue
        sec = _SECTION.match(line)
        if sec:
            section = sec.group("title")
            continue
        subject = _SUBJECT.match(line)
        if subject:
            where[subject.group("curie")] = (prefix, section)
    return where, namespaces


def ontology_model(ttl: Path) -> JSONObject:
    """Everything the ontology reference shows, read from the TTL file."""

    text = ttl.read_text(encoding="utf-8")
    g = rdflib.Graph().parse(data=text, format="turtle")
    ns = {p: str(iri) for p, iri in g.namespaces()}

    def curie(node: Node) -> str:
        if isinstance(node, BNode):
            members = list(g.objects(node, OWL.unionOf))
            if members:
                return " ∪ ".join(curie(m) for m in Collection(g, members[0]))
            return "(anonymous)"
        value = str(node)
        best = ""
        for prefix, base in ns.items():
            if prefix and value.startswith(base) and len(base) > len(best):
                best, name = base, f"{prefix}:{value[len(base) :]}"
        return name if best else value

    def text_of(node: Node, pred: URIRef) -> str:
        values = sorted(g.objects(node, pred), key=lambda o: (getattr(o, "language", None) != "en", str(o)))
        return str(values[0]) if values else ""

    onto = next(g.subjects(RDF.type, OWL.Ontology))
    where, ns_titles = _sections_of(text)
    namespaces = {p: Namespace(p, ns[p], title) for p, title in ns_titles}
    other = Namespace("", "", "Other terms")
    for kind_iri, kind in _KINDS.items():
        for subject in g.subjects(RDF.type, URIRef(kind_iri)):
            if isinstance(subject, BNode) or subject == onto:
                continue
            c = curie(subject)
            meaning, specs = split_comment(
                text_of(subject, RDFS.comment), sorted(str(o) for o in g.objects(subject, RDFS.seeAlso))
            )
            term = Term(c, str(subject), kind, text_of(subject, RDFS.label), meaning, specs)
            domains = [curie(d) for d in g.objects(subject, RDFS.domain)]
            ranges = [curie(r) for r in g.objects(subject, RDFS.range)]
            term.domain = ", ".join(sorted(domains))
            term.range = ", ".join(sorted(ranges))
            for pred, label in (
                (RDFS.subClassOf, "subclass of"),
                (RDFS.subPropertyOf, "subproperty of"),
                (OWL.inverseOf, "inverse of"),
            ):
                term.notes += [f"{label} `{curie(o)}`" for o in sorted(g.objects(subject, pred), key=str)]
            prefix, title = where.get(c, ("", ""))
            target = namespaces.get(prefix, other)
            section = next((s for s in target.sections if s.title == (title or "Other")), None)
            if section is None:
                section = Section(title or "Other")
                target.sections.append(section)
            section.terms.append(term)
    order = {c: i for i, c in enumerate(where)}
    for namespace in [*namespaces.values(), other]:
        section_order: dict[tuple[str, str], int] = {}
        for prefix, title in where.values():
            section_order.setdefault((prefix, title), len(section_order))
        namespace.sections.sort(key=lambda s: section_order.get((namespace.prefix, s.title), len(section_order)))
        for section in namespace.sections:
            section.terms.sort(key=lambda t: (list(_KINDS.values()).index(t.kind), order.get(t.curie, 1e9), t.curie))
    return {
        "iri": str(onto),
        "label": text_of(onto, RDFS.label),
        "comment": text_of(onto, RDFS.comment),
        "version": text_of(onto, OWL.versionInfo),
        "see_also": sorted(str(o) for o in g.objects(onto, RDFS.seeAlso)),
        "namespaces": [n for n in [*namespaces.values(), other] if n.sections],
        "count": sum(len(s.terms) for n in [*namespaces.values(), other] for s in n.sections),
        "source": "ontology/processkg.ttl",
    }


def ontology_reference(ttl: Path | None = None) -> str:
    return _render("ontology-reference.md.j2", **ontology_model(Path(ttl or ontology_path())))


# ---------------------------------------------------------------- CLI reference


def _commands(group: click.Group, ctx: click.Context, path: tuple[str, ...]) -> list[JSONObject]:
    out = []
    for name in group.list_commands(ctx):
        cmd = group.get_command(ctx, name)
        if cmd is None or getattr(cmd, "hidden", False):
            continue
        sub = click.Context(cmd, info_name=name, parent=ctx)
        out.append(_command_model(cmd, sub, (*path, name)))
        if isinstance(cmd, click.Group):
            out.extend(_commands(cmd, sub, (*path, name)))
    return out


def _command_model(cmd: click.Command, ctx: click.Context, path: tuple[str, ...]) -> JSONObject:
    options, arguments = [], []
    for param in cmd.get_params(ctx):
        if isinstance(param, click.Argument):
            arguments.append(
                {"name": param.make_metavar(ctx), "required": param.required, "multiple": param.nargs != 1}
            )
            continue
        record = param.get_help_record(ctx)
        if record is None:
            continue
        opts, help_text = record
        extras = re.search(r"\s*\[([^\[\]]*)\]\s*$", help_text)
        if extras and any(k in extras.group(1) for k in ("default:", "required")):
            help_text = help_text[: extras.start()]
            extra = extras.group(1)
        else:
            extra = ""
        options.append({"opts": opts, "help": help_text.strip(), "extra": extra})
    return {
        "path": " ".join(path),
        "usage": " ".join([PROGRAM, *path[1:], *cmd.collect_usage_pieces(ctx)]),
        "help": _dedent(cmd.help or ""),
        "short": cmd.get_short_help_str(limit=300),
        "options": options,
        "arguments": arguments,
        "depth": len(path) - 1,
    }


def _dedent(text: str) -> str:

    return inspect.cleandoc(text).replace("\b\n", "")


def cli_model(group: click.Group) -> JSONObject:
    ctx = click.Context(group, info_name=PROGRAM)
    root = _command_model(group, ctx, (PROGRAM,))
    return {"root": root, "commands": _commands(group, ctx, (PROGRAM,))}


def cli_reference(group: click.Group) -> str:
    return _render("cli.md.j2", **cli_model(group))


# ---------------------------------------------------------------- query library reference

#: "Parameters:", "Parameters (all optional; unbound: ...):", "Result:", "Example:", anywhere in a line.
_HEADER_PART = re.compile(r"\b(Parameters|Result|Example)(\s*\([^()]*\))?:")


@dataclass
class QueryDoc:
    name: str
    summary: str
    description: str
    parameters: str
    result: str
    example: str
    variables: list[str]  # parameter variables named in the Parameters: section


def parse_query_header(name: str, text: str) -> QueryDoc:
    """Split the leading ``#`` comment of a library query into its documented parts.

    Format: ``# NAME: summary``, free description lines, then sections that start with
    ``Parameters:``, ``Result:`` and ``Example:`` (continuation lines are indented).
    """
    lines = []
    for line in text.splitlines():
        if not line.startswith("#"):
            break
        lines.append(line[1:].strip())
    if lines and lines[0].lower().startswith(f"{name.lower()}:"):
        lines[0] = lines[0].split(":", 1)[1].strip()
    parts: dict[str, list[str]] = {"summary": [], "description": [], "parameters": [], "result": [], "example": []}
    current = "summary"
    for line in lines:
        while line:
            head = _HEADER_PART.search(line)
            if head is None:
                parts[current].append(line)
                break
            if line[: head.start()].strip():
                parts[current].append(line[: head.start()].strip())
            current = head.group(1).lower()
            if head.group(2):
                parts[current].append(head.group(2).strip())
            line = line[head.end() :].strip()
        if current == "summary" and parts["summary"] and re.search(r"[.?!:]$", parts["summary"][-1]):
            current = "description"
    params = " ".join(parts["parameters"])
    variables = list(dict.fromkeys(re.findall(r"\?(\w+)", params)))
    summary, rest = _first_sentence(" ".join(parts["summary"]))
    description = " ".join(x for x in (rest, " ".join(parts["description"])) if x)
    return QueryDoc(
        name, summary, description, params, " ".join(parts["result"]), " ".join(parts["example"]), variables
    )


def _first_sentence(text: str) -> tuple[str, str]:
    """(the first sentence, the rest)."""
    parts = re.split(r"(?<=[.?!])\s+", text, maxsplit=1)
    return (parts[0], parts[1]) if len(parts) == 2 else (text, "")


def query_docs(folder: Path | None = None) -> list[QueryDoc]:
    folder = Path(folder or queries_dir())
    return [parse_query_header(p.stem, p.read_text(encoding="utf-8")) for p in sorted(folder.glob("*.rq"))]


def queries_reference(folder: Path | None = None) -> str:
    internal = query_docs(internal_queries_dir()) if folder is None else []
    return _render("queries.md.j2", queries=query_docs(folder), internal=internal)


# ---------------------------------------------------------------- all pages


def generate(group: click.Group) -> dict[str, str]:
    """{file name: content} of every generated page."""
    return {
        "ontology-reference.md": ontology_reference(),
        "cli.md": cli_reference(group),
        "queries.md": queries_reference(),
    }


def write_docs(out: Path, group: click.Group) -> list[Path]:
    written = []
    for name, content in generate(group).items():
        path = Path(out) / name
        if not path.exists() or path.read_text(encoding="utf-8") != content:
            write_atomic(path, content.encode("utf-8"))
        written.append(path)
    return written


def stale_docs(out: Path, group: click.Group) -> list[str]:
    """Names of the generated pages whose file in ``out`` is missing or differs."""
    return [
        name
        for name, content in generate(group).items()
        if not (Path(out) / name).exists() or (Path(out) / name).read_text(encoding="utf-8") != content
    ]
