"""Layout of a process diagram: columns, rows per lane, pools, and the route of each flow."""

from __future__ import annotations

from model import (
    EV,
    GAP,
    GW,
    LANE_X,
    PARTNER_GAP,
    PARTNER_H,
    POOL_X,
    POOL_Y,
    ROW_H,
    SUB_PAD,
    TASK_H,
    TASK_W,
    X0,
    Flow,
    MessageFlow,
    Node,
    Proc,
)


# ---------------------------------------------------------------------------- layout
def _size(n: Node) -> tuple:
    if n.is_activity:
        return TASK_W, TASK_H
    if n.is_gateway:
        return GW, GW
    return EV, EV


class Layout:
    """Columns by longest path over the forward flows; rows by lane and row number."""

    def __init__(self, p: Proc) -> None:
        self.p = p
        self.subs = {n.id: n for n in p.nodes.values() if n.tag == "subProcess"}
        self.lane_rows: dict[str, int] = {}
        self.lane_y: dict[str, float] = {}
        self.partner_box: dict[str, tuple] = {}
        self.pool: tuple = ()
        self.lane_box: dict[str, tuple] = {}
        self.sub_cols: dict[str, tuple] = {}

    def inner(self, sid: str) -> list:
        return [n for n in self.p.nodes.values() if n.parent == sid and not n.attached]

    def run(self) -> None:
        p = self.p
        for n in p.nodes.values():
            n.w, n.h = _size(n)
        self._columns()
        self._rows()
        self._place()
        for f in p.flows:
            f.points = self._route(f)
        for m in p.messages:
            m.points = self._route_message(m)

    def _columns(self) -> None:
        p = self.p
        edges = []  # (a, b, weight)
        has_in = {f.target for f in p.flows}
        has_out = {f.source for f in p.flows}
        for f in p.flows:
            if f.back:
                continue
            sources = [f.source]
            if f.source in self.subs:
                sources = [n.id for n in self.inner(f.source) if n.id not in has_out]
            for s in sources:
                edges.append((s, f.target, 1 + p.nodes[f.target].shift))
        for sid in self.subs:
            for n in self.inner(sid):
                if n.id not in has_in:
                    edges.append((sid, n.id, 0))
        for n in p.nodes.values():
            if n.attached:
                hosts = [n.attached]
                if n.attached in self.subs:
                    hosts = [m.id for m in self.inner(n.attached)]
                for h in hosts:
                    edges.append((h, n.id, 0))
        col = {nid: 0 for nid in p.nodes}
        indeg = {nid: 0 for nid in p.nodes}
        out: dict[str, list] = {nid: [] for nid in p.nodes}
        for a, b, w in edges:
            out[a].append((b, w))
            indeg[b] += 1
        ready = [nid for nid in p.nodes if indeg[nid] == 0]
        seen = 0
        while ready:
            a = ready.pop(0)
            seen += 1
            for b, w in out[a]:
                col[b] = max(col[b], col[a] + w)
                indeg[b] -= 1
                if indeg[b] == 0:
                    ready.append(b)
        if seen != len(p.nodes):
            raise ValueError(f"{p.id}: forward flows have a cycle; mark the loop flow back=True")
        for nid, c in col.items():
            p.nodes[nid].col = c
        for sid in self.subs:
            cols = [n.col for n in self.inner(sid)]
            self.sub_cols[sid] = (min(cols), max(cols))

    def _rows(self) -> None:
        p = self.p
        y = POOL_Y
        for key, _ in p.lanes:
            rows = [n.row for n in p.nodes.values() if n.lane == key]
            self.lane_rows[key] = (max(rows) + 1) if rows else 1
            self.lane_y[key] = y
            y += self.lane_rows[key] * ROW_H

    def _place(self) -> None:
        p = self.p
        ncols = max(n.col for n in p.nodes.values()) + 1
        width = [0.0] * ncols
        for n in p.nodes.values():
            if n.tag == "subProcess" or n.attached:
                continue
            width[n.col] = max(width[n.col], n.w)
        extra = [0] * (ncols + 1)
        for first, last in self.sub_cols.values():
            extra[first] += SUB_PAD
            extra[last + 1] += SUB_PAD
        xs, x = [], X0
        for c in range(ncols):
            x += extra[c] + (GAP if c else 0)
            xs.append(x)
            x += width[c]
        right = x + extra[ncols] + 60
        self.col_x = xs
        for n in p.nodes.values():
            if n.tag == "subProcess" or n.attached:
                continue
            cy = self.lane_y[n.lane] + n.row * ROW_H + ROW_H / 2
            n.x = xs[n.col] + (width[n.col] - n.w) / 2
            n.y = cy - n.h / 2
        for sid, sub in self.subs.items():
            inner = self.inner(sid)
            cy = self.lane_y[sub.lane] + sub.row * ROW_H + ROW_H / 2
            sub.x = min(n.x for n in inner) - SUB_PAD
            sub.w = max(n.right for n in inner) + SUB_PAD - sub.x
            sub.y = cy - 70
            sub.h = 140
        for n in p.nodes.values():
            if n.attached:
                host = p.nodes[n.attached]
                n.x = host.right - 30 - EV / 2
                n.y = host.bottom - EV / 2
        lanes_bottom = POOL_Y + sum(self.lane_rows[k] for k, _ in p.lanes) * ROW_H
        self.pool = (POOL_X, POOL_Y, right - POOL_X, lanes_bottom - POOL_Y)
        for key, _ in p.lanes:
            self.lane_box[key] = (LANE_X, self.lane_y[key], right - LANE_X, self.lane_rows[key] * ROW_H)
        top_y = POOL_Y - PARTNER_GAP - PARTNER_H
        bottom_y = lanes_bottom + PARTNER_GAP
        for key, _, where in p.partners:
            y = top_y if where == "top" else bottom_y
            self.partner_box[key] = (POOL_X, y, right - POOL_X, PARTNER_H)
            if where == "top":
                top_y -= PARTNER_H + PARTNER_GAP
            else:
                bottom_y += PARTNER_H + PARTNER_GAP

    def _blocked(self, s: Node, t: Node) -> bool:
        """Another shape on the straight line between s and t (same row)."""
        lo, hi = s.right, t.x
        for n in self.p.nodes.values():
            if n.id in (s.id, t.id) or n.attached or (n.tag == "subProcess" and n.id in (s.parent, t.parent)):
                continue
            if n.x < hi and n.right > lo and n.y < s.cy < n.bottom:
                return True
        return False

    def _route(self, f: Flow) -> list:
        p = self.p
        s, t = p.nodes[f.source], p.nodes[f.target]
        if s.attached:
            return [(s.cx, s.bottom), (s.cx, t.cy), (t.x, t.cy)]
        if f.back == "above":
            yt = min(s.y, t.y) - 22
            return [(s.cx, s.y), (s.cx, yt), (t.cx, yt), (t.cx, t.y)]
        if f.back:  # below
            yb = max(s.bottom, t.bottom) + 22
            return [(s.cx, s.bottom), (s.cx, yb), (t.cx, yb), (t.cx, t.bottom)]
        if abs(s.cy - t.cy) < 1:
            if self._blocked(s, t):
                yt = min(s.y, t.y) - 22
                return [(s.cx, s.y), (s.cx, yt), (t.cx, yt), (t.cx, t.y)]
            return [(s.right, s.cy), (t.x, t.cy)]
        down = t.cy > s.cy
        split = s.is_gateway and len(s.outgoing) > 1
        join = t.is_gateway and len(t.incoming) > 1
        candidates = []
        if join:  # along the source's row, then into the join from above or below
            candidates.append([(s.right, s.cy), (t.cx, s.cy), (t.cx, t.y if down else t.bottom)])
        if split and s.tag in ("exclusiveGateway", "inclusiveGateway"):
            # labelled siblings leaving the same corner: only the one whose target is nearest uses it
            same_side = [
                p.nodes[g.target]
                for g in p.flows
                if g.source == s.id
                and not g.back
                and (p.nodes[g.target].cy > s.cy + 1 if down else p.nodes[g.target].cy < s.cy - 1)
            ]
            nearest = min(same_side, key=lambda n: (abs(n.cy - s.cy), n.x))
            split = nearest.id == t.id
        if split:  # out of the split's top or bottom corner, then along the target's row
            candidates.append([(s.cx, s.bottom if down else s.y), (s.cx, t.cy), (t.x, t.cy)])
        mx = self.col_x[t.col] - GAP / 2  # in the gap before the target's column
        if t.tag == "subProcess":
            mx = t.x - (GAP + SUB_PAD) / 2
        candidates.append([(s.right, s.cy), (mx, s.cy), (mx, t.cy), (t.x, t.cy)])
        for points in candidates:
            if not flow_crossings(self.p, f, points):
                return points
        return candidates[0]

    def _route_message(self, m: MessageFlow) -> list:
        p = self.p
        if m.source in p.nodes:
            n, box = p.nodes[m.source], self.partner_box[m.target]
            outward = True
        else:
            n, box = p.nodes[m.target], self.partner_box[m.source]
            outward = False
        top = box[1] < POOL_Y
        a = (n.cx, n.y if top else n.bottom)
        b = (n.cx, box[1] + box[3] if top else box[1])
        return [a, b] if outward else [b, a]


# ---------------------------------------------------------------------------- geometry
def _rect(n: Node) -> tuple:
    return (n.x, n.y, n.right, n.bottom)


def _overlap(a: tuple, b: tuple) -> bool:
    return a[0] < b[2] and b[0] < a[2] and a[1] < b[3] and b[1] < a[3]


def _segment_hits(p1: tuple, p2: tuple, r: tuple, margin: float = 1.0) -> bool:
    (x1, y1), (x2, y2) = p1, p2
    lo_x, hi_x = min(x1, x2), max(x1, x2)
    lo_y, hi_y = min(y1, y2), max(y1, y2)
    return lo_x < r[2] - margin and hi_x > r[0] + margin and lo_y < r[3] - margin and hi_y > r[1] + margin


def flow_crossings(p: Proc, f: Flow, points: list) -> list:
    """Ids of the shapes a sequence flow with these waypoints passes through."""
    ends = {f.source, f.target}
    hits = []
    for n in p.nodes.values():
        if n.id in ends or n.attached in ends:
            continue
        if n.tag == "subProcess" and (
            n.id == p.nodes[f.source].parent
            or n.id == p.nodes[f.target].parent
            or any(p.nodes[e].attached == n.id for e in ends)
        ):
            continue
        if any(_segment_hits(a, b, _rect(n)) for a, b in zip(points, points[1:])):
            hits.append(n.id)
    return hits
