"""What a task's own words name in the entity sets ``find_entity_sets`` found: the key of a record
("sales order 0000000003": ``SalesOrder``) with the read that fetches it, and codes, by their label
("a rush order": ``SalesOrderType`` ``RO=Rush Order``) or by their value after the property's name
("channel 10": ``DistributionChannel`` ``10``), and values of other writable properties named by their
name or the master record SAP's role name stands for ("customer 0000000002": ``SoldToParty``).

An agent otherwise has to turn the task's words into an OData path and into codes itself; a small
model gets both wrong (quotes left off a key, a path made up, a code from memory). Everything here
comes from the graph (key properties, their lengths, the code lists and their labels), nothing from
the server: a named key is a value of the right shape, not a record known to exist.

A value belongs to a property when the word right before it (or before "number", "no", "nr" or "id")
is the last word of the property's name or label and, for a key, its other words come shortly
before ("sales order 0000000003", "channel 10"). Words match when equal, when the shorter has at
least four letters and the longer up to three more ("order"/"ordered", "german"/"germany"), when
the longer has one letter more ("us"/"usa"), or when the shorter has at least five letters and
ends in a vowel or "y" that the longer replaces ("china"/"chinese", "italy"/"italian").
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from dataclasses import dataclass

from processkg.retrieve.context import key_predicate
from processkg.retrieve.texts import singular, words_of
from processkg.serve.references import MASTER_KEYS
from processkg.services.model import Prop, TypeInfo

WINDOW = 4  # words before a value that may name its property
CODES_PER_PROPERTY = 3
#: a quoted text (a quote after a letter is an apostrophe: "the customer's"), a word or value, a character
TOKEN = re.compile(r"(?<![A-Za-z])'[^']+'(?![A-Za-z])|\"[^\"]+\"|[A-Za-z0-9][A-Za-z0-9_/.-]*[A-Za-z0-9]|[A-Za-z0-9]")
#: a task that starts (within its first words) with one of these asks to create: its sets' lines end with
#: ``create POST PATH {body}`` of the values and single codes named
CREATE_VERBS = frozenset({"create", "record", "raise", "open", "report", "add", "enter", "post"})
MIN_BODY = 3  # named properties a set needs for a create line (fewer: the task is not about it)
FILLERS = frozenset({"number", "no", "id", "nr"})
STOP = frozenset(
    {"a", "an", "and", "are", "as", "at", "be", "by", "for", "from", "has", "have", "in", "into", "is", "it"}
    | {"its", "of", "on", "or", "the", "this", "that", "to", "was", "with", "which", "what", "who", "whose"}
)
#: a property holding a master record's key under one of SAP's role names -> the record's name
#: (``SoldToParty`` -> ``Customer``): "customer 0000000002" is a value of ``SoldToParty``
ROLES = {name: master for master, names in MASTER_KEYS.items() for name in names if name != master}
NUMERIC = frozenset({"Edm.Int16", "Edm.Int32", "Edm.Int64", "Edm.Byte", "Edm.SByte", "Edm.Decimal", "Edm.Double"})


@dataclass(frozen=True)
class Token:
    text: str  # as written
    word: str  # lower case, plural stripped ("" for a value with a digit)


def tokens(task: str) -> list[Token]:
    """The task's words and values in order; a value is a token with a digit (``0000000003``, ``SW-001``)
    or a quoted text (``'SW-010 pump leaking'``, without its quotes)."""
    out = []
    for text in TOKEN.findall(task):
        if text[0] in "'\"":
            out.append(Token(text[1:-1], ""))
        elif any(c.isdigit() for c in text):
            out.append(Token(text, ""))
        else:
            out.extend(Token(w, singular(w.lower())) for w in re.findall(r"[A-Za-z]+", text))
    return out


def same_word(a: str, b: str) -> bool:
    """Whether two lower-case words are one word in another form (see the module's rule)."""
    short, long = sorted((a, b), key=len)
    if not short:
        return False
    extra = len(long) - len(short)
    if long.startswith(short):
        return extra == 0 or (len(short) >= 4 and extra <= 3) or (len(short) >= 2 and extra == 1)
    return len(short) >= 5 and short[-1] in "aeiouy" and long.startswith(short[:-1]) and extra <= 3


def _has(words: Iterable[str], word: str) -> bool:
    return any(same_word(w, word) for w in words)


def name_words(name: str) -> list[str]:
    """The content words of a property or label name (``SoldToParty``: sold, party)."""
    return [w for w in (singular(p.lower()) for p in words_of(name)) if w not in STOP]


def named_values(task: list[Token], prop: Prop, label: str, all_words: bool, role: str = "") -> list[str]:
    """Values of the task right after the property's name (its last word, then with ``all_words`` its other
    words within :data:`WINDOW` words before: "sales order 0000000003"; without, the last word only:
    "channel 10" for ``DistributionChannel``) that fit its length."""
    names = [name_words(prop.name)] + [name_words(other) for other in (label, role) if other]
    found = []
    for i, token in enumerate(task):
        if token.word or (prop.max_length is not None and len(token.text) > prop.max_length):
            continue
        j = i - 1 - int(i > 1 and task[i - 1].word in FILLERS)
        if j < 0 or not task[j].word:
            continue
        before = [t.word for t in task[max(0, j - WINDOW) : j] if t.word]
        for words in names:
            if (
                words
                and same_word(task[j].word, words[-1])
                and (not all_words or all(_has(before, w) for w in words[:-1]))
            ):
                found.append(token.text)
                break
    return list(dict.fromkeys(found))


def codes_by_label(task: list[Token], prop: Prop, code_labels: dict[tuple[str, str], str]) -> list[str]:
    """``code=label`` of the codes all of whose label words (the property's own words left out: "Sales
    Organization Germany" is "germany" for ``SalesOrganization``) are in the task; the best matched first."""
    words = [t.word for t in task if t.word and t.word not in STOP]
    own = set(name_words(prop.name))
    scored = []
    for code in prop.codes or ():
        label = code_labels.get((prop.iri, code), "")
        wanted = [w for w in name_words(label) if w not in own]
        if wanted and all(_has(words, w) for w in wanted):
            scored.append((-len(wanted), code, label))
    return [f"{code}={label}" for _n, code, label in sorted(scored)[:CODES_PER_PROPERTY]]


def _pair(text: str) -> tuple[str, str]:
    name, value = text.split("=", 1)
    return name, value


def _literal(prop: Prop, value: str) -> str | None:
    """``value`` as a $filter literal of the property's type (None where this module does not write one)."""
    if prop.edm_type in ("Edm.String", ""):
        return "'" + value.replace("'", "''") + "'"
    return value if prop.edm_type in NUMERIC and value.isdigit() else None


def key_read(task: list[Token], entity_set: str, path: str, t: TypeInfo, labels: dict[str, str], version: str) -> str:
    """The read of the record the task names: ``GET PATH('0000000003')`` when every key property has a
    value, ``GET PATH?$filter=SalesOrder eq '0000000003'`` when the first ones have; "" otherwise."""
    keys = [p for p in t.props.values() if p.key]
    values: dict[str, str] = {}
    for prop in keys:
        named = named_values(task, prop, labels.get(prop.iri, ""), all_words=True)
        if len(named) != 1:
            break
        values[prop.name] = named[0]
    if not keys or not values:
        return ""
    base = path[: -len(entity_set)] if path.endswith(entity_set) else ""
    if len(values) == len(keys):
        template = key_predicate(entity_set, [{"name": p.name, "type": p.edm_type} for p in keys], version)
        for name, value in values.items():
            template = template.replace("{" + name + "}", value.replace("'", "''"))
        return f"GET {base}{template}"
    clauses = []
    for prop in keys[: len(values)]:
        literal = _literal(prop, values[prop.name])
        if literal is None:
            return ""
        clauses.append(f"{prop.name} eq {literal}")
    return f"GET {path}?$filter={' and '.join(clauses)}"


def named_in_task(
    task: str,
    found: list[tuple[str, str, str, TypeInfo]],
    labels: dict[str, str],
    code_labels: dict[tuple[str, str], str],
) -> list[str]:
    """One line per found entity set (service, entity set, path, type) whose key or codes the task names:
    ``SERVICE/SET: read GET ...; values Property=value; codes Property code=label; Property, Property
    code=label; create POST PATH {...}``: values of other writable properties named by their name, label or
    SAP's role name (:data:`ROLES`), the properties that the same codes fit named together, and for a task
    that asks to create (:data:`CREATE_VERBS`) the body of those values and of each property's one named
    code (not checked: ``call`` validates it)."""
    words = tokens(task)
    writes = any(t.word in CREATE_VERBS for t in words[:WINDOW])
    lines: list[str] = []
    for service, entity_set, path, t in found:
        parts = []
        read = key_read(words, entity_set, path, t, labels, t.version)
        if read:
            parts.append(f"read {read}")
        values = [
            f"{prop.name}={value}"
            for prop in sorted(t.props.values(), key=lambda p: p.name)
            if not prop.key and not prop.codes and not prop.read_only
            for value in named_values(words, prop, labels.get(prop.iri, ""), True, ROLES.get(prop.name, ""))[:1]
        ]
        if values:
            parts.append("values " + ", ".join(values))
        fits: dict[str, list[str]] = {}
        one: dict[str, str] = {}  # property -> its only named code
        for prop in sorted(t.props.values(), key=lambda p: p.name):
            if not prop.codes or prop.key:
                continue
            by_value = [c for c in named_values(words, prop, labels.get(prop.iri, ""), False) if c in prop.codes]
            shown = [f"{c}={code_labels[(prop.iri, c)]}" if (prop.iri, c) in code_labels else c for c in by_value]
            shown += [c for c in codes_by_label(words, prop, code_labels) if c.split("=", 1)[0] not in by_value]
            if shown:
                fits.setdefault(", ".join(shown[:CODES_PER_PROPERTY]), []).append(prop.name)
                if len(shown) == 1 and not prop.read_only:
                    one[prop.name] = shown[0].split("=", 1)[0]
        if fits:
            parts.append("codes " + "; ".join(f"{', '.join(names)} {codes}" for codes, names in fits.items()))
        body: dict[str, str] = dict(sorted([_pair(v) for v in values] + list(one.items())))
        if writes and len(body) >= MIN_BODY:
            parts.append(f"create POST {path} {json.dumps(body)}")
        if parts:
            lines.append(f"{service}/{entity_set}: {'; '.join(parts)}")
    return lines


__all__ = ["Token", "codes_by_label", "key_read", "named_in_task", "named_values", "same_word", "tokens"]
