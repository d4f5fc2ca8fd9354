"""Graph label values: the five axes as the registry caches them, and the configured floor
(tools-graphs-governance §1.3; ``[quipu.labels]``). Plain values, no store access."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Final

# Ordered axes, weakest first: a rank is the position + 1 (0 is never stored).
FRESHNESS: Final = ("stale", "recomputing", "fresh")
DURABILITY: Final = ("soleRecord", "reproducible", "backed")


@dataclass(frozen=True, slots=True)
class Labels:
    """One declaration's axes as the cache holds them; None is an undeclared axis."""

    freshness: str | None = None
    durability: str | None = None
    trust_iri: str | None = None
    trust_rank: int | None = None
    trust_chain: str | None = None
    policy: tuple[str, ...] | None = None  # sorted, distinct
    kind: str | None = None
    tx: int | None = None  # the declaring transaction; None: never labelled
    valid_to: str | None = None  # after this instant the declaration reads as undeclared

    @classmethod
    def from_cache(cls, row: Any) -> Labels:
        """The registry's cache columns, in ``LABEL_COLUMNS`` order, as labels."""
        fresh, durable, t_iri, t_rank, chain, policy, kind, labels_tx, valid_to = row
        return cls(
            freshness=FRESHNESS[fresh - 1] if fresh else None,
            durability=DURABILITY[durable - 1] if durable else None,
            trust_iri=t_iri,
            trust_rank=None if t_rank is None else int(t_rank),
            trust_chain=chain,
            policy=tuple(policy.split()) if policy else None,
            kind=kind,
            tx=None if labels_tx is None else int(labels_tx),
            valid_to=valid_to,
        )

    def expired(self, now: str) -> bool:
        return self.valid_to is not None and self.valid_to <= now

    def in_effect(self, now: str) -> Labels:
        """These labels, or all-undeclared once expired (tools-graphs-governance §1.3)."""
        return Labels() if self.tx is None or self.expired(now) else self

    @property
    def declared(self) -> bool:
        return self.tx is not None

    def as_json(self) -> dict[str, Any]:
        return {
            "freshness": self.freshness,
            "durability": self.durability,
            "trust_rank": self.trust_rank,
            "trust_chain": self.trust_chain,
            "policy": " ".join(self.policy) if self.policy else None,
            "kind": self.kind,
        }


@dataclass(frozen=True, slots=True)
class LabelFloor:
    """``[quipu.labels]``: every key unset means no label work at all."""

    min_freshness: str | None = None
    min_trust_rank: int | None = None
    min_trust_chain: str | None = None
    deny_policy_tokens: tuple[str, ...] = ()
    deny_data_kinds: tuple[str, ...] = ()

    @property
    def active(self) -> bool:
        return bool(
            self.min_freshness
            or self.min_trust_rank is not None
            or self.deny_policy_tokens
            or self.deny_data_kinds
        )

    def refusal(self, labels: Labels) -> str | None:
        """Why a graph with these labels (in effect) fails this floor, or None."""
        if self.min_freshness:
            if labels.freshness is None:
                return f"declares no freshness; [quipu.labels] min_freshness is {self.min_freshness!r}"
            if FRESHNESS.index(labels.freshness) < FRESHNESS.index(self.min_freshness):
                return f"is {labels.freshness!r}, below min_freshness {self.min_freshness!r}"
        if self.min_trust_rank is not None:
            if labels.trust_rank is None:
                return f"declares no trust; [quipu.labels] min_trust_rank is {self.min_trust_rank}"
            if labels.trust_chain != self.min_trust_chain:
                return (
                    f"is trusted in chain <{labels.trust_chain}>, not the floor's chain "
                    f"<{self.min_trust_chain}> (ranks of different chains are not comparable)"
                )
            if labels.trust_rank < self.min_trust_rank:
                return f"has trust rank {labels.trust_rank}, below min_trust_rank {self.min_trust_rank}"
        denied = sorted(set(labels.policy or ()) & set(self.deny_policy_tokens))
        if denied:
            return f"carries denied policy token(s) {', '.join(denied)} (deny_policy_tokens)"
        if labels.kind is not None and labels.kind in self.deny_data_kinds:
            return f"has data kind {labels.kind!r}, denied by deny_data_kinds"
        return None
