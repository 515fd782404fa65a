"""Goal-phrased requests: the object of the goal first.

An agent phrases a goal ("give the business partner a bank account", "change the requested
delivery date of a sales order"): the request's verb acts on an object, and the entity set that
*is* that object is the answer, not a set that only shares words with the request. The routed
ranking scores sets by similarity to the whole request, so a set named by a word of the object
phrase ("bank") or by a modifier ("for a purchase order") can outrank the object itself.

This module reads the goal's object from the request's form, without any list of our entity sets:

* a goal is a clause that starts (after "please", "I need to", ...) with an imperative verb of
  :data:`VERBS`; the first such clause of the request counts ("The truck is late: update ...");
* its object is the phrase after the verb, up to the first preposition, conjunction, pronoun or
  punctuation, without articles and numbers; if
  no entity set's name lies in that phrase and the phrase is followed by "of" ("the requested
  delivery date *of* a sales order"), the phrase after "of" (the owner of what changes);
* an entity set is named by the phrase when every word of its name (the name part of its
  summary, "business partner bank"; "header" is no distinguishing word) occurs in the phrase.

Among the routed ranking's top :data:`CANDIDATES`, the sets the object phrase names move to the
front, the most specific name (most words) first, ties in the routed order; everything else keeps
its order (scores are unchanged: a lifted set keeps its own). A request that is no goal, or whose
object names no candidate, is ranked as before. The verbs, the stop words and :data:`CANDIDATES`
were chosen on ``data/sap/goals-train`` only.
"""

from __future__ import annotations

import re
from functools import lru_cache

import numpy as np

from processkg.retrieve.texts import singular, words_of

#: How far down the routed ranking a named object may be lifted from.
CANDIDATES = 20
#: Imperative verbs that start a goal: what an agent is asked to do to a record.
VERBS = frozenset(
    [
        "add",
        "amend",
        "approve",
        "assign",
        "block",
        "book",
        "cancel",
        "change",
        "close",
        "complete",
        "confirm",
        "copy",
        "correct",
        "create",
        "delete",
        "display",
        "draw",
        "enter",
        "extend",
        "find",
        "get",
        "give",
        "issue",
        "lift",
        "list",
        "lock",
        "maintain",
        "mark",
        "modify",
        "move",
        "open",
        "place",
        "post",
        "put",
        "raise",
        "read",
        "record",
        "register",
        "release",
        "remove",
        "reverse",
        "schedule",
        "set",
        "settle",
        "shift",
        "show",
        "store",
        "submit",
        "transfer",
        "unblock",
        "update",
    ]
)
#: Words before the verb that do not change the goal ("please", "I need to", "can you").
_LEAD = re.compile(
    r"^\s*(?:please\s+|kindly\s+)?(?:(?:i|we)\s+(?:need|want|have|would like)\s+to\s+|can you\s+|could you\s+|let's\s+|"
    r"(?:i|we)\s+must\s+)?(?:please\s+)?",
    re.I,
)
#: Where a request's clauses end: a goal may follow a situation ("the truck is late: update ...").
_CLAUSES = re.compile(r"[.;:!?]\s+|\s+[-\u2013\u2014]\s+")
#: Where the object phrase ends.
_PREPOSITIONS = frozenset(
    [
        "for",
        "of",
        "to",
        "on",
        "in",
        "from",
        "with",
        "at",
        "by",
        "into",
        "as",
        "under",
        "until",
        "per",
        "via",
        "because",
        "so",
        "that",
        "which",
        "who",
        "whose",
        "where",
        "when",
        "and",
        "or",
        "then",
        "but",
        "it",
        "them",
        "we",
        "they",
    ]
)
#: Words of a phrase that name nothing: articles, quantifiers, pronouns.
_FILLER = frozenset(
    [
        "a",
        "an",
        "the",
        "new",
        "another",
        "our",
        "my",
        "their",
        "its",
        "this",
        "these",
        "those",
        "all",
        "some",
        "up",
        "me",
        "us",
    ]
)
#: Name words that do not distinguish an object ("material document header" is the material document).
_GENERIC = frozenset({"header", "a", "api"})


def _words(text: str) -> list[str]:
    return [singular(w.lower()) for w in words_of(text)]


def object_phrases(query: str) -> list[list[str]]:
    """The goal's object phrase, then the phrase after "of" that follows it, from the first clause
    that starts with a verb ("The truck is late: update the date of delivery 18"); none if no goal."""
    for clause in _CLAUSES.split(query):
        phrases = _clause_phrases(clause)
        if phrases:
            return phrases
    return []


def _clause_phrases(clause: str) -> list[list[str]]:
    rest = _LEAD.sub("", clause, count=1)
    tokens = re.findall(r"[A-Za-z][A-Za-z'\-]*|[0-9]+|[^\sA-Za-z0-9]", rest)
    if not tokens or tokens[0].lower() not in VERBS:
        return []
    phrases: list[list[str]] = []
    current: list[str] = []
    for token in tokens[1:]:
        low = token.lower()
        if low in _PREPOSITIONS or not token[0].isalnum():
            phrases.append(current)
            if low != "of" or len(phrases) > 1:
                break
            current = []
            continue
        if low not in _FILLER and not token[0].isdigit():
            current.extend(_words(token))
    else:
        phrases.append(current)
    return [p for p in phrases[:2] if p]


@lru_cache(maxsize=4096)
def name_words(summary: str) -> frozenset[str]:
    """The words of an entity set's name: the part of its summary before " (" (see ``texts``)."""
    return frozenset(_words(summary.split(" (", 1)[0])) - _GENERIC


def named_by(phrase: list[str], names: list[frozenset[str]]) -> np.ndarray:
    """Per set: how many name words the phrase holds if it holds all of them, else 0."""
    words = set(phrase)
    return np.array([len(n) if n and n <= words else 0 for n in names], dtype=np.float64)


def goal_order(query: str, summaries: list[str], order: list[int]) -> list[int]:
    """``order`` (rows, best first) with the sets the goal's object phrase names moved to the front
    (most specific name first) among the first :data:`CANDIDATES`; ``summaries``: per row."""
    head, tail = order[:CANDIDATES], order[CANDIDATES:]
    names = [name_words(summaries[row]) for row in head]  # only the candidates: a query costs the same at any size
    for phrase in object_phrases(query):
        named = named_by(phrase, names)
        if named.any():
            first = sorted((i for i in range(len(head)) if named[i] > 0), key=lambda i: (-named[i], i))
            rest = [head[i] for i in range(len(head)) if named[i] == 0]
            return [head[i] for i in first] + rest + tail
    return order
