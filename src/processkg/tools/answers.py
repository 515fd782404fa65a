"""What ``call`` shows of an OData answer: as little as an agent can act on, never a value it asked for.

The rule (docs/mcp.md, *Trimmed answers*):

* always left out: ``__metadata``, members that are only a deferred link, V4 control information
  (``@odata.count`` and ``@odata.nextLink`` stay); at most :data:`MAX_ROWS` records per collection;
* with ``select`` (the tool's argument): only those fields of each record, whatever their value;
* with ``$select`` in the URL: the fields the server returned, all of them;
* otherwise each record shows its keys, the fields the request names (``$filter``, ``$orderby``,
  ``$expand``; of a write's body only those the server answers with another value: the others are
  as sent, and a note counts them) and up to :data:`ONE_RECORD` other fields that hold a value, a
  collection's records :data:`IN_ALL` fields together (at least :data:`PER_ROW_MIN` each): first
  references to master data and amounts or quantities, then fields with a code list, then the rest,
  each group in the server's order (``rank``), shown in the server's order.
  Initial values (``null``, ``""``, ``false``, zero numbers and zero strings such as ``"0"``,
  ``"0.000"``, ``"00000000"``, a zero GUID, ``/Date(0)/``, ``PT00H00M00S``) are left out as SAP leaves
  such fields empty; a note says so and names the fields that had a value but were not shown, so
  that the next call can ``select`` them.
"""

from __future__ import annotations

import re

from processkg.aliases import JSONObject, JSONValue

MAX_ROWS = 10  # records of a collection shown to the agent; the rest are counted
ONE_RECORD = 16  # fields with a value shown of a single record (keys and asked-for fields besides)
IN_ALL = 32  # fields with a value shown of a collection's records together
PER_ROW_MIN = 4  # fields with a value shown of each record of a long collection at least
NAMED = 12  # names of fields not shown listed in the note; more are counted
#: V4 control information left out of an answer (the ETag is handled by ``call``; count and next link stay).
V4_CONTROL = frozenset({"@odata.context", "@odata.etag", "@odata.metadataEtag", "@odata.id", "@odata.editLink"})
ZERO = re.compile(r"^[+-]?0+(\.0*)?$|^0{8}-0{4}-0{4}-0{4}-0{12}$|^/Date\(0([+-]0+)?\)/$|^PT0+H0+M0+S$|^0000-00-00")


def initial(value: JSONValue) -> bool:
    """Whether ``value`` is SAP's initial (empty) value of a field: null, "", false, 0, a zero string."""
    if value is None or value is False or value == "":
        return True
    if isinstance(value, int | float) and not isinstance(value, bool):
        return value == 0
    return isinstance(value, str) and bool(ZERO.match(value))


def trimmed(
    answer: JSONValue,
    select: list[str] | None = None,
    keep: frozenset[str] | None = None,
    rank: dict[str, int] | None = None,
    sent: JSONValue = None,
) -> tuple[JSONValue, list[str]]:
    """An OData answer as the agent is shown it, and notes on what was left out (module docstring).
    ``keep``: the field names always shown (keys, those the request names); None shows every field
    (an answer to ``$select``, an error). ``rank``: which fields come first when not all can be shown
    (lower first; a field not in it last). ``sent``: a write's body, whose fields the answer repeats
    only where the server's value differs."""
    answer = _clean(answer)
    if not isinstance(answer, dict):
        return answer, []
    inner = answer.get("d")
    holder, key = (
        (inner, "results") if isinstance(inner, dict) and isinstance(inner.get("results"), list) else (answer, "value")
    )
    rows = holder.get(key)
    notes: list[str] = []
    if select:
        tree = _select_tree(select)
        if isinstance(rows, list):
            holder[key] = rows = [_selected(r, tree) for r in rows]
        elif isinstance(inner, dict):
            answer["d"] = _selected(inner, tree)
        else:
            answer = _selected(answer, tree)
    elif keep is not None and "error" not in answer:
        narrow = _Narrow(keep, rank or {})
        if isinstance(rows, list):
            limit = per_record(min(len(rows), MAX_ROWS))
            holder[key] = rows = [narrow.record(r, limit) for r in rows[:MAX_ROWS]] + rows[MAX_ROWS:]
        elif isinstance(inner, dict):
            answer["d"] = narrow.record(inner, ONE_RECORD, sent)
        else:
            answer = narrow.record(answer, ONE_RECORD, sent)
        notes = narrow.notes()
    if not isinstance(rows, list) or len(rows) <= MAX_ROWS:
        return answer, notes
    cut = dict(holder, **{key: rows[:MAX_ROWS]}, processkg_truncated=f"{len(rows) - MAX_ROWS} more records not shown")
    return ({"d": cut} if holder is inner else cut), notes


def per_record(records: int) -> int:
    """Fields with a value shown of each of ``records`` records: :data:`IN_ALL` shared, within
    :data:`PER_ROW_MIN` and :data:`ONE_RECORD`."""
    return max(PER_ROW_MIN, min(ONE_RECORD, IN_ALL // max(records, 1)))


class _Narrow:
    """Records cut to what an agent needs, remembering what was left out for the note."""

    def __init__(self, keep: frozenset[str], rank: dict[str, int]) -> None:
        self.keep, self.rank = keep, rank
        self.hidden: dict[str, None] = {}  # names of fields with a value not shown, in first-seen order
        self.dropped = False  # whether an initial value was left out
        self.echoed = 0  # fields of a write's body the answer repeats unchanged, left out

    def record(self, record: JSONValue, limit: int, sent: JSONValue = None) -> JSONValue:
        """The ``keep`` fields and expanded navigations (their records narrowed in turn), the fields of
        ``sent`` (a write's body) the server changed, and the first ``limit`` other fields that hold a
        value by ``rank``; in the record's order."""
        if not isinstance(record, dict):
            return record
        given = sent if isinstance(sent, dict) else {}
        out: JSONObject = {}
        candidates: list[str] = []
        for name, value in record.items():
            if isinstance(value, list) or (isinstance(value, dict) and isinstance(value.get("results"), list)):
                rows = value if isinstance(value, list) else value["results"]
                children = _rows(given.get(name))
                many = [
                    self.record(r, per_record(len(rows)), children[i] if i < len(children) else None)
                    for i, r in enumerate(rows)
                ]
                out[name] = many if isinstance(value, list) else dict(value, results=many)
            elif isinstance(value, dict):
                out[name] = self.record(value, ONE_RECORD, given.get(name))
            elif name in self.keep:
                out[name] = value
            elif name in given:
                if _same(given[name], value):
                    self.echoed += 1
                else:
                    out[name] = value
            elif initial(value):
                self.dropped = True
            else:
                out[name] = value
                candidates.append(name)
        order = sorted(range(len(candidates)), key=lambda i: (self.rank.get(candidates[i], len(self.rank) + 9), i))
        for i in order[limit:]:
            del out[candidates[i]]
        for name in candidates:
            if name not in out:
                self.hidden[name] = None
        return out

    def notes(self) -> list[str]:
        """The note on what was left out: initial values, and the fields with a value not shown."""
        plural = "s" if self.echoed > 1 else ""
        parts = [f"{self.echoed} field{plural} as sent, not repeated"] if self.echoed else []
        if self.dropped:
            parts.append('empty or initial values (null, "", 0, false) left out')
        if self.hidden:
            names = list(self.hidden)
            more = f" (+{len(names) - NAMED} more)" if len(names) > NAMED else ""
            parts.append(f"not shown (select them): {', '.join(names[:NAMED])}{more}")
        return ["; ".join(parts)] if parts else []


def _rows(value: JSONValue) -> list[JSONValue]:
    """The records of a deep-inserted navigation in a body: a list, or V2's ``{"results": [...]}``."""
    if isinstance(value, dict) and isinstance(value.get("results"), list):
        return list(value["results"])
    return list(value) if isinstance(value, list) else []


def _same(sent: JSONValue, answered: JSONValue) -> bool:
    """Whether the server answered a field with the value the body sent (``5`` and ``"5"`` alike)."""
    return sent == answered or (not isinstance(sent, dict | list) and str(sent) == str(answered))


def _clean(value: JSONValue) -> JSONValue:
    """``value`` without ``__metadata``, members that are only a deferred link, and V4 control information."""
    if isinstance(value, list):
        return [_clean(v) for v in value]
    if not isinstance(value, dict):
        return value
    return {
        k: _clean(v)
        for k, v in value.items()
        if k != "__metadata" and k not in V4_CONTROL and not (isinstance(v, dict) and "__deferred" in v)
    }


def _select_tree(paths: list[str]) -> JSONObject:
    """``["A", "to_Item/B"]`` as ``{"A": {}, "to_Item": {"B": {}}}``."""
    tree: JSONObject = {}
    for path in paths:
        node = tree
        for name in [p.strip() for p in path.split("/") if p.strip()]:
            node = node.setdefault(name, {})
    return tree


def _selected(value: JSONValue, tree: JSONObject) -> JSONValue:
    """A record (or the records of an expanded navigation) cut to the members of ``tree``."""
    if isinstance(value, list):
        return [_selected(v, tree) for v in value]
    if not isinstance(value, dict) or not tree:
        return value
    if isinstance(value.get("results"), list) and "results" not in tree:
        return dict(value, results=_selected(value["results"], tree))
    return {k: _selected(v, tree[k]) for k, v in value.items() if k in tree}


__all__ = ["MAX_ROWS", "ONE_RECORD", "initial", "per_record", "trimmed"]
