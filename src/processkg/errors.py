"""Typed errors. Each carries what a user needs to find the problem: file, line, element."""

from __future__ import annotations


class ProcessKGError(Exception):
    """Base class: a problem with the user's input, reported without a traceback."""


class InputError(ProcessKGError):
    """A problem located in an input file."""

    def __init__(self, message: str, file: str, line: int | None = None, column: int | None = None):
        self.file = str(file)
        self.line = line
        self.column = column
        self.message = message
        super().__init__(self._render())

    def _render(self) -> str:
        where = self.file
        if self.line is not None:
            where += f":{self.line}"
            if self.column is not None:
                where += f":{self.column}"
        return f"{where}: {self.message}"


class MalformedXMLError(InputError):
    """The file is not well-formed XML, or uses DTD entities (rejected for safety)."""


class NotODataError(InputError):
    """The document is XML, but not an OData CSDL service metadata document."""


class NotBPMNError(InputError):
    """The document is XML, but not a BPMN 2.0 definitions document."""


class UnresolvedReferenceError(InputError):
    """A reference (type, association, entity set, flow node) names nothing declared."""

    def __init__(
        self, file: str, line: int | None, tag: str, element_id: str, ref: str, spec: str = "", attribute: str = ""
    ):
        self.tag = tag
        self.element_id = element_id
        self.ref = ref
        if ref:
            message = f"{tag} {element_id!r} refers to {ref!r}, which is not declared"
        else:
            message = f"{tag} {element_id!r} has no {attribute or 'reference'}, which is required"
        if spec:
            message += f" (see {spec})"
        super().__init__(message, file, line)


class MappingError(InputError):
    """A mapping-file entry that does not resolve to a process activity or an entity set."""


class CodeListError(InputError):
    """A code-list CSV row that cannot be read."""


class RequiredFieldsError(InputError):
    """A row of a curated required-on-create CSV (``kg build --required``) that cannot be read."""


class DocumentFlowError(InputError):
    """A row of a curated document-flow CSV (``kg build --flow``) that cannot be read."""


class EventLogError(InputError):
    """A record of a recording or an event log (``kg build --events``) that cannot be read or resolved."""


class AssetMissingError(ProcessKGError):
    """A file that ships inside the package (ontology, shapes, queries, templates) is missing."""


class ProposalError(ProcessKGError):
    """Proposals cannot be made or read (bad settings, a broken proposals file)."""


class JsonLinesError(InputError):
    """A JSON Lines file cannot be read (missing, not a regular file, too large), or one of its
    lines is not a usable JSON record (not JSON, too long, too deep, too many keys)."""


class QueryError(ProcessKGError):
    """A SPARQL query that cannot run: a syntax error, an undeclared prefix, a parameter
    that cannot be bound, or a result that is not a table."""


class QueryRefusedError(QueryError):
    """A query processkg never runs: it could reach a network (SERVICE, FROM) or it is an update."""


class QueryLimitError(QueryError):
    """A query stopped at a bound: it ran longer than its timeout or returned more rows than its limit."""


class ServeDataError(ProcessKGError):
    """A ``kg serve --data`` file that cannot be loaded (not JSON, an unknown entity set, a record without key)."""


class ServeQueryError(ProcessKGError):
    """A system query option ``kg serve`` cannot read (the server answers 400)."""


class UnsupportedQueryError(ProcessKGError):
    """A system query option or function ``kg serve`` does not implement (the server answers 501)."""


class IndexDamagedError(ProcessKGError):
    """A store's retrieval index cannot be read (a file garbled, truncated or missing, or its
    parts disagree); the message names the store, the damaged file and ``kg index --store``."""


class EmptyQueryError(ProcessKGError):
    """A retrieval query that is empty or only whitespace: nothing to rank by."""


class RetrievalRequestError(ProcessKGError):
    """A retrieval request (``GET /$processkg/retrieve``'s parameters) that names an unknown
    parameter or gives one a value of the wrong kind; the message names the parameter."""


class DuplicateDeclarationError(InputError):
    """Two elements declare the same identifier (a BPMN id, an OData qualified name); reading
    on would silently replace the first by the second."""


class MissingIdError(InputError):
    """A BPMN element the model needs to refer to (process, flow node, flow, lane, participant)
    has no ``id``; several would collapse into one node."""


class FlowTooLargeError(InputError):
    """A BPMN model whose derived ``bpmn:next`` pairs exceed the bound: a gateway joining M
    branches and splitting into N makes M x N pairs, which would grow the graph quadratically."""


class StoreNotFoundError(ProcessKGError):
    """No processkg store at the given path (nothing built there yet)."""


class StoreDamagedError(ProcessKGError):
    """A store's database cannot be opened (a file missing, truncated or corrupt); the message
    names the store, the damaged file and the ``kg build ... --store`` command that rebuilds it."""


class StoreRefusedError(ProcessKGError):
    """``kg build --store PATH`` refuses PATH: it is not a processkg store (a plain file, a folder
    of other files), or it contains the current directory or the build's inputs."""


class StoreBusyError(ProcessKGError):
    """Another ``kg build`` (or ``kg index``) holds the store's lock: only one writer at a time."""


class RemoteStoreError(ProcessKGError):
    """A store given as a SPARQL server URL (``--store http://...``) that does not answer, refuses a
    request, or was switched by another ``kg build`` meanwhile; the message names the URL."""


class OutputRefusedError(ProcessKGError):
    """An output file that is not replaced: it exists and is not a regular file (a directory, a device)."""


class SOCBenchError(InputError):
    """A SOCBench-D folder or queries.json that does not follow the benchmark's layout."""


class BenchmarkError(ProcessKGError):
    """A retrieval benchmark file (JSON Lines of queries with gold entity sets) that cannot be used."""


class ModelError(ProcessKGError):
    """The embedding model cannot be loaded (offline: only local paths and cached models)."""


class IndexNotFoundError(ProcessKGError):
    """The store has no retrieval index, or one built with another model or format."""


class RankingModelError(ProcessKGError):
    """The routed ranking model (``assets/ranking/routed.json``) is missing, damaged or of other kinds."""


class ModelNotInstalledError(ProcessKGError):
    """A model that is named but not installed: an embedding model, or the local chat model, whose PyPI
    packages (or llama-cpp-python to run it) are missing."""


class QueryFileError(ProcessKGError):
    """A ``kg retrieve --queries`` file that cannot be read."""


class LLMError(ProcessKGError):
    """The LLM endpoint failed or answered something that is not a usable choice."""


class ContextFullError(LLMError):
    """The LLM endpoint refused the conversation as longer than the model's context window (HTTP 400
    with "maximum context length", OpenAI's ``context_length_exceeded``, llama.cpp's "exceeds the
    available context size")."""


class GraphCheckError(ProcessKGError):
    """``kg build --check``: the new graph violates ``shapes/graph.ttl``; the old store is kept."""

    def __init__(self, violations: list[dict[str, str | None]]) -> None:
        self.violations = violations
        lines = [f"  {v['shape']}: {v['focus']} {v['path'] or ''} {v['constraint']}" for v in violations[:20]]
        more = f"\n  ... and {len(violations) - 20} more" if len(violations) > 20 else ""
        super().__init__(
            f"the graph violates shapes/graph.ttl ({len(violations)} violations); "
            "the previous store is unchanged:\n" + "\n".join(lines) + more
        )


class MalformedJSONError(InputError):
    """The file is not well-formed JSON (or not UTF-8)."""


class NotOpenAPIError(InputError):
    """The document is JSON, but has no top-level ``openapi`` field."""


class UnsupportedOpenAPIError(InputError):
    """An OpenAPI document of a version this reader does not lift (Swagger/OpenAPI 2.0)."""


class OpenAPIStructureError(InputError):
    """A member of the document has the wrong JSON type or lacks a required field."""


class OpenAPIReferenceError(InputError):
    """A ``$ref`` that points at nothing in the document, outside it, or in a circle."""


class MalformedCall(ProcessKGError):
    """A call that cannot be understood (reported as a ``malformed`` violation, not raised to the user)."""


class ServeHTTPError(ProcessKGError):
    """A request ``kg serve`` answers with an error status and an OData error body (never a traceback)."""

    def __init__(self, status: int, code: str, message: str, details: list[dict[str, str]] | None = None):
        super().__init__(message)
        self.status, self.code, self.message, self.details = status, code, message, details or []


class ServeBindError(ProcessKGError):
    """``kg serve`` cannot listen on the address it was given (the port is in use, the host is unknown)."""


class ToolArgumentError(ProcessKGError):
    """A tool of ``processkg.tools`` called with arguments it cannot use (an unknown entity set, a
    missing argument): the message goes back to the agent, which can repair the call."""


class ODataClientError(ProcessKGError):
    """The OData server a ``call`` tool talks to cannot be reached or refused the connection setup
    (not an error answer of the server: those are returned to the agent as they are)."""


class ODataURLError(ProcessKGError):
    """A URL the OData client will not send to: another origin than its base URL, or a path that
    leaves the base URL's root (so that its credentials never reach another server)."""


class AgentEvalError(ProcessKGError):
    """``kg eval agent`` cannot go on: its output folder holds another evaluation's runs, or the chat
    endpoint fails on the first run (a wrong URL or model) or keeps failing."""


class TaskFileError(InputError):
    """An agent task file (``kg eval agent``'s tasks, ``data/sap/tasks/tasks.jsonl``) holds a record that
    is not a usable task: not JSON, a missing field, an unknown kind, a goal it cannot check."""


class JsonValueLimitError(ValueError):
    """Raised inside the JSON parser's hooks when an object has more keys than the reader allows."""
