"""Benchmark ``kg validate``: 10,000 generated POST calls against the A2X corpus.

Usage: ``python benchmarks/bench_validate.py [--calls N] [--store DIR] [--seed S]``

Builds a store from ``../shared/data/odata/s4-a2x`` (unless ``--store`` names one), generates
a realistic mix of valid calls and calls with one injected violation of each kind (deep
inserts included), validates them (a) in one batch through pySHACL and (b) one call at a
time, and prints calls/s for both, their ratio, and whether the verdicts agree.
Target: at least 1,000 calls/s in batch on the 2-core reference machine.
"""

from __future__ import annotations

import argparse
import os
import random
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
A2X = HERE.parent.parent / "shared" / "data" / "odata" / "s4-a2x"
INJECTED = (
    "unknown-property",
    "missing-required",
    "read-only",
    "invalid-code",
    "datatype",
    "max-length",
    "cardinality",
    "unknown-navigation",
    "unknown-entity-set",
    "unknown-service",
    "malformed",
)


# ---------------------------------------------------------------- values


def good_value(p, v2: bool, rnd: random.Random):
    """A value of ``p`` in the OData JSON format of the service's version."""
    if p.codes:
        return rnd.choice(p.codes)
    t = p.item_type
    if t == "Edm.Boolean":
        return rnd.random() < 0.5
    if t == "Edm.Decimal":
        text = _decimal(p.precision, p.scale, rnd)
        return text if v2 else float(text)
    if t == "Edm.Int64":
        text = str(rnd.randint(1, 9999))
        return text if v2 else int(text)
    if t in ("Edm.Int16", "Edm.Int32", "Edm.Byte", "Edm.SByte"):
        return rnd.randint(0, 100)
    if t in ("Edm.Double", "Edm.Single"):
        return rnd.random() * 100
    if t == "Edm.DateTime":
        return f"/Date({rnd.randint(1_600_000_000, 1_800_000_000) * 1000})/"
    if t == "Edm.DateTimeOffset":
        return "2025-03-01T10:00:00Z"
    if t == "Edm.Date":
        return "2025-03-01"
    if t == "Edm.TimeOfDay":
        return "10:30:00"
    if t in ("Edm.Time", "Edm.Duration"):
        return "PT10H30M00S"
    if t == "Edm.Guid":
        return "005056a2-1c4b-1eda-8a8d-7b1c2f3e4d5a"
    if t == "Edm.String":
        return "X" * max(1, min(p.max_length or 8, rnd.randint(1, 8)))
    return None


def settable(t) -> list:
    """Properties of ``t`` a generated payload may set: simple, creatable, with a known value form."""
    from processkg.validate.payload_shapes import EDM_XSD

    return [
        p
        for n, p in sorted(t.props.items())
        if not p.read_only and not p.collection and not p.complex_type and p.item_type in EDM_XSD
    ]


def entity(model, t, v2: bool, rnd: random.Random, depth: int = 0) -> dict:
    props = settable(t)
    chosen = {p.name: p for p in props if p.required}
    for p in rnd.sample(props, min(len(props), rnd.randint(3, 12))):
        chosen[p.name] = p
    payload = {n: good_value(p, v2, rnd) for n, p in sorted(chosen.items())}
    navs = [n for n in sorted(t.navs.values(), key=lambda n: n.name) if n.target in model.types]
    if depth < 2 and navs and rnd.random() < 0.35:
        nav = rnd.choice(navs)
        target = model.types[nav.target]
        if nav.to_many:
            payload[nav.name] = [entity(model, target, v2, rnd, depth + 1) for _ in range(rnd.randint(1, 3))]
        else:
            payload[nav.name] = entity(model, target, v2, rnd, depth + 1)
    return payload


# ---------------------------------------------------------------- calls


def generate_calls(model, n: int, seed: int = 7, invalid_share: float = 0.45) -> list[tuple[dict, str | None]]:
    """``n`` POST calls as (call, injected kind or None)."""
    rnd = random.Random(seed)
    targets = [
        (svc, name, model.types[iri])
        for svc in sorted(model.services.values(), key=lambda s: s.name)
        for name, (iri, creatable) in sorted(svc.sets.items())
        if creatable and iri in model.types
    ]
    calls = []
    for i in range(n):
        kind = INJECTED[i % len(INJECTED)] if rnd.random() < invalid_share else None
        calls.append(_call(model, targets, f"c{i}", kind, rnd))
    return calls


def _call(model, targets: list, call_id: str, kind: str | None, rnd: random.Random) -> tuple:
    """A valid call, with one violation of ``kind`` injected (another target when its type offers none)."""
    for _attempt in range(500):
        svc, set_name, t = rnd.choice(targets)
        v2 = svc.version == "2.0"
        call = {
            "id": call_id,
            "service": svc.name,
            "entity_set": set_name,
            "method": "POST",
            "payload": entity(model, t, v2, rnd),
        }
        if kind is None or inject(call, t, kind, v2, rnd):
            return call, kind
    return call, None


def inject(call: dict, t, kind: str, v2: bool, rnd: random.Random) -> bool:
    """Make ``call`` carry one violation of ``kind``; False where the type offers no way to."""
    payload = call["payload"]
    props = settable(t)
    strings = [p for p in props if p.item_type == "Edm.String" and p.max_length and not p.codes]
    if kind == "unknown-property":
        payload["ZZ_InventedField"] = "1"
    elif kind == "unknown-navigation":
        payload["to_InventedNavigation"] = [{"A": "1"}]
    elif kind == "missing-required":
        required = [p for p in props if p.required and p.name in payload]
        if not required:
            return False
        del payload[rnd.choice(required).name]
    elif kind == "read-only":
        ro = [p for n, p in sorted(t.props.items()) if p.read_only and not p.complex_type and not p.collection]
        if not ro:
            return False
        payload[ro[0].name] = "1"
    elif kind == "invalid-code":
        coded = [p for p in props if p.codes and (p.max_length or 3) >= 3]
        if not coded:
            return False
        payload[coded[0].name] = "ZZZ"
    elif kind == "datatype":
        if not props:
            return False
        payload.update(_wrong_type(props, v2))
    elif kind == "max-length":
        if not strings:
            return False
        p = rnd.choice(strings)
        payload[p.name] = "Y" * (p.max_length + 1)
    elif kind == "cardinality":
        many = [n for n in t.navs.values() if n.to_many]
        if not many:
            return False
        payload[many[0].name] = {}
    elif kind == "unknown-entity-set":
        call["entity_set"] += "_Invented"
    elif kind == "unknown-service":
        call["service"] += "_INVENTED"
    elif kind == "malformed":
        del call["method"]
    return True


def _decimal(precision: int | None, scale: int | None, rnd: random.Random) -> str:
    """Up to 999.99, cut to the property's Precision and Scale (kg validate checks both); two draws
    whatever the facets, so the calls drawn after it are the same for any metadata."""
    whole, fraction = rnd.randint(1, 999), rnd.randint(0, 99)
    room = 3 if precision is None else max(0, min(3, precision - (scale or 0)))
    places = min(2, scale if scale is not None else (2 if precision is None else precision - room))
    text = str(whole % 10**room)
    return f"{text}.{fraction % 10**places:0{places}d}" if places else text


def _wrong_type(props: list, v2: bool) -> dict:
    for p in props:
        if p.item_type == "Edm.Decimal" and v2:
            return {p.name: 12.5}
        if p.item_type == "Edm.Boolean":
            return {p.name: "yes"}
    return {props[0].name: {"not": "a scalar"}}


def verdict(result) -> tuple:
    return result.valid, tuple(sorted((v.kind, v.path) for v in result.violations))


# ---------------------------------------------------------------- main


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--calls", type=int, default=10_000)
    ap.add_argument("--store", type=Path)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--single", type=int, default=None, help="validate only this many calls one at a time")
    ap.add_argument("--out", type=Path, default=HERE / "results" / "validate.json")
    args = ap.parse_args(argv)
    from processkg.build.pipeline import BuildOptions, build_store
    from processkg.graph.handle import StoreHandle, StoreLocation
    from processkg.validate.calls import Validator

    store = args.store
    if store is None:
        if not A2X.is_dir():
            print(f"no A2X corpus at {A2X}", file=sys.stderr)
            return 2
        store = Path(tempfile.mkdtemp(prefix="bench-validate-")) / "a2x"
        build_store(BuildOptions(odata=[A2X], store=StoreLocation.parse(store)))
    t0 = time.perf_counter()
    validator = Validator(StoreHandle.open(store))
    for name in validator.model.services:  # build and parse the shapes before timing
        validator.engine(name)
    print(f"model and shapes loaded in {time.perf_counter() - t0:.1f} s")
    pairs = generate_calls(validator.model, args.calls, args.seed)
    calls = [c for c, _ in pairs]
    batch, batch_s, batch_cpu = _timed(lambda: validator.validate_calls(calls))
    sample = calls[: args.single] if args.single else calls
    single, single_s, single_cpu = _timed(lambda: [validator.validate_call(c) for c in sample])
    agree = sum(verdict(a) == verdict(b) for a, b in zip(batch, single))
    caught = sum(1 for (c, kind), r in zip(pairs, batch) if kind and kind in {v.kind for v in r.violations})
    injected = sum(1 for _, kind in pairs if kind)
    print(
        f"{len(calls):,} calls, {injected:,} with an injected violation ({caught:,} caught), "
        f"{sum(r.valid for r in batch):,} valid"
    )
    print(
        f"(a) batch:      {len(calls) / batch_s:6,.0f} calls/s  ({batch_s:.2f} s wall; "
        f"{len(calls) / batch_cpu:,.0f} calls per CPU second)"
    )
    print(
        f"(b) one by one: {len(sample) / single_s:6,.0f} calls/s  ({single_s:.2f} s wall for {len(sample):,}; "
        f"{len(sample) / single_cpu:,.0f} calls per CPU second)"
    )
    print(f"load average while measuring: {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    print(f"ratio batch / one-by-one: {(len(calls) / batch_s) / (len(sample) / single_s):.1f}x")
    print(f"verdicts agree: {agree:,} of {len(sample):,}")
    _write(
        args.out,
        {
            "calls": len(calls),
            "injected": injected,
            "caught": caught,
            "batch_calls_per_s": round(len(calls) / batch_s, 1),
            "batch_calls_per_cpu_s": round(len(calls) / batch_cpu, 1),
            "single_calls_per_s": round(len(sample) / single_s, 1),
            "single_sample": len(sample),
            "ratio": round((len(calls) / batch_s) / (len(sample) / single_s), 2),
            "verdicts_agree": agree,
            "load_average": round(os.getloadavg()[0], 2),
            "cpus": os.cpu_count(),
            "target_batch_calls_per_s": 1000,
        },
    )
    return 0 if agree == len(sample) else 1


def _write(path: Path, result: dict) -> None:
    import json

    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(result, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    print(f"wrote {path}")


def _timed(fn):
    """(result, wall seconds, CPU seconds of this process): other work on the machine shows in the gap."""
    start, cpu = time.perf_counter(), time.process_time()
    out = fn()
    return out, time.perf_counter() - start, time.process_time() - cpu


if __name__ == "__main__":
    sys.path.insert(0, str(HERE.parent / "src"))
    raise SystemExit(main())
