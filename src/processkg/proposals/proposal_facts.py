"""What mapping proposals work on: the activities, the entity sets, the weights and the proposals."""

from __future__ import annotations

from dataclasses import asdict, dataclass

from processkg.errors import ProposalError


@dataclass(frozen=True)
class ProposalWeights:
    """Signal weights and the cut. Defaults: chosen on the train half (docs/mapping-proposals.md)."""

    dense: float = 1.0
    dense_name: float = 0.5
    lexical: float = 0.5
    lexical_short: float = 0.5
    header: float = 0.0
    unwritable: float = 0.2
    process_service: float = 0.0
    item: float = 0.0
    neighbour: float = 0.0
    known: float = 0.0
    top_n: int = 2
    threshold: float = 0.625
    ratio: float = 0.9
    dedupe: bool = True

    def check(self) -> ProposalWeights:
        if self.top_n < 1:
            raise ProposalError(f"--top-n must be at least 1, not {self.top_n}")
        if not 0 <= self.ratio <= 1:
            raise ProposalError(f"--ratio must be between 0 and 1, not {self.ratio}")
        if self.dense + self.dense_name + self.lexical + self.lexical_short + self.header <= 0:
            raise ProposalError("at least one signal weight must be positive")
        return self

    def describe(self) -> str:
        return ", ".join(f"{k}={v}" for k, v in asdict(self).items())


@dataclass(frozen=True)
class Proposal:
    process: str
    activity: str
    service: str
    entity_set: str
    mode: str
    score: float
    reason: str = ""
    file: str = ""
    activity_name: str = ""

    def edge(self) -> tuple[str, str, str, str]:
        return (self.process, self.activity, self.service, self.entity_set)


@dataclass(frozen=True)
class ActivityFacts:
    iri: str
    id: str
    name: str
    documentation: str
    lane: str
    process: str
    process_name: str
    file: str

    def text(self) -> str:
        """As the retrieval index words it (summaries.activity_items)."""
        parts = [f"{self.name}."] + ([self.documentation.strip()] if self.documentation else [])
        parts += [f"Lane: {self.lane}."] if self.lane else []
        return " ".join(parts + ([f"Process: {self.process_name}."] if self.process_name else []))


@dataclass(frozen=True)
class EntitySetFacts:
    iri: str
    service: str
    name: str
    version: float
    writable: bool
    keys: int
    short: str  # name as words, and labels
    summary: str
    fields: str = ""  # every property (key first) as words, with its label
