"""Stratification: the order in which rules run so that negation only reads finished relations.

Predicates are nodes; every body atom is an edge from its predicate to the rule's head
predicate, negative for a ``not`` atom. Mutually recursive predicates (a strongly connected
component) are evaluated together, components in dependency order. A negative edge inside a
component would make a predicate depend on its own absence, so such a rule set is refused with
every predicate of the component, as the original reports it. As in the original, each component
holding a rule head is its own stratum (``strata_run`` counts them).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from graphlib import TopologicalSorter

from quipu.reasoning.ruleset import Rule, RuleError


@dataclass(frozen=True)
class Stratum:
    predicates: frozenset[str]  # the component's predicates
    rules: tuple[Rule, ...]  # the rules whose head is one of them
    recursive: bool  # some rule's body reads a predicate of the component


def stratify(rules: tuple[Rule, ...]) -> list[Stratum]:
    import numpy as np  # imported on first use: start-up imports only what the first answer needs
    from scipy.sparse import coo_matrix
    from scipy.sparse.csgraph import connected_components

    names = sorted({r.head.predicate for r in rules} | {a.predicate for r in rules for a in r.body})
    index = {name: k for k, name in enumerate(names)}
    edges = [(index[a.predicate], index[r.head.predicate]) for r in rules for a in r.body]
    n = len(names)
    if not n:
        return []
    graph = coo_matrix(
        (np.ones(len(edges)), ([src for src, _ in edges], [dst for _, dst in edges])), shape=(n, n)
    ).tocsr()
    _count, labels = connected_components(graph, directed=True, connection="strong")
    members: dict[int, list[str]] = {}
    for name, label in zip(names, labels, strict=True):
        members.setdefault(int(label), []).append(name)
    for rule in rules:
        for atom in rule.body:
            src, dst = index[atom.predicate], index[rule.head.predicate]
            # an aggregate reads its body's relations whole, as a negation does: both need them finished
            if (atom.negated or rule.head.aggregate is not None) and labels[src] == labels[dst]:
                cycle = json.dumps(sorted(members[int(labels[src])]))
                kind = "negation" if atom.negated else "aggregation"  # [designed here]
                raise RuleError(f"rule set is not stratifiable: {kind} cycle through {cycle}")
    order = TopologicalSorter({int(labels[d]): set() for d in range(n)})
    for src, dst in edges:
        if labels[src] != labels[dst]:
            order.add(int(labels[dst]), int(labels[src]))
    strata: list[Stratum] = []
    for label in order.static_order():
        predicates = frozenset(members[label])
        own = tuple(r for r in rules if r.head.predicate in predicates)
        if own:
            recursive = any(a.predicate in predicates for r in own for a in r.body)
            strata.append(Stratum(predicates, own, recursive))
    return strata
