"""Run pySHACL and turn its report graph into structured issues (tools-core §2.1 response).

Each issue names its severity, focus node, constraint component, path, value, source shape and
message, plus ``allowed``: the values the constraint would have accepted where the shapes state
them (``sh:in``, ``sh:class``, ``sh:datatype``, ``sh:hasValue``, ``sh:nodeKind``), so a caller
can repair the data without reading the shapes.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from pyshacl import Shape, ShapesGraph, Validator
from pyshacl.errors import ValidationFailure
from pyshacl.graph_abstraction import DataGraph
from pyshacl.validator import assign_baked_in
from rdflib import RDF, XSD, BNode, Graph, Literal, URIRef
from rdflib.collection import Collection
from rdflib.namespace import SH
from rdflib.term import Node

from quipu.errors import InvalidField, QuipuError

SEVERITIES = {SH.Violation: "Violation", SH.Warning: "Warning", SH.Info: "Info"}

# constraint component -> the shape parameter whose values are the valid alternatives
_ALTERNATIVES = {
    SH.ClassConstraintComponent: SH["class"],
    SH.DatatypeConstraintComponent: SH.datatype,
    SH.HasValueConstraintComponent: SH.hasValue,
    SH.NodeKindConstraintComponent: SH.nodeKind,
}


@dataclass(frozen=True)
class Issue:
    severity: str  # Violation, Warning or Info
    focus_node: Any
    component: str | None
    path: str | None
    value: Any
    source_shape: str | None
    message: str
    allowed: list[Any] | None = None

    def as_json(self) -> dict[str, Any]:
        out = {
            "severity": self.severity,
            "focus_node": self.focus_node,
            "component": self.component,
            "path": self.path,
            "value": self.value,
            "source_shape": self.source_shape,
            "message": self.message,
        }
        if self.allowed is not None:
            out["allowed"] = self.allowed
        return out


@dataclass(frozen=True)
class Report:
    issues: list[Issue] = field(default_factory=list)

    @property
    def conforms(self) -> bool:
        # SHACL's definition: any result, of any severity, means non-conformance (§2.1 rule 3).
        return not self.issues

    def count(self, severity: str) -> int:
        return sum(1 for i in self.issues if i.severity == severity)

    def as_json(self) -> dict[str, Any]:
        return {
            "conforms": self.conforms,
            "violations": self.count("Violation"),
            "warnings": self.count("Warning"),
            "infos": self.count("Info"),
            "issues": [i.as_json() for i in self.issues],
        }

    def summary(self, limit: int = 3) -> str:
        """Up to ``limit`` issues in one line, for refusal messages and logs."""
        parts = [f"{i.focus_node}: {i.message}" for i in self.issues[:limit]]
        more = len(self.issues) - limit
        return "; ".join(parts) + (f" (and {more} more)" if more > 0 else "")


def term_json(term: Node | None) -> Any:
    """A term in the JSON output form of DM §2.1 (IRIs bare, blank nodes as ``_:…``)."""
    if term is None:
        return None
    if isinstance(term, BNode):
        return f"_:{term}"
    if isinstance(term, URIRef):
        return str(term)
    if isinstance(term, Literal):
        if term.language:
            return {"value": str(term), "lang": term.language}
        dt = term.datatype
        if dt is None or dt == XSD.string:
            return str(term)
        if not term.ill_typed and dt in (XSD.integer, XSD.boolean, XSD.double):
            py = term.toPython()
            if isinstance(py, bool | int | float):
                return py
        return {"value": str(term), "datatype": str(dt)}
    return str(term)


def _curie(term: Node | None) -> str | None:
    if term is None:
        return None
    text = str(term)
    return "sh:" + text[len(str(SH)) :] if text.startswith(str(SH)) else text


def path_text(shapes: Graph, path: Node | None) -> str | None:
    """A SHACL path as SPARQL property-path text (a predicate path is its bare IRI)."""
    if path is None:
        return None
    if isinstance(path, URIRef):
        return str(path)
    return _path(shapes, path)


def _path(g: Graph, node: Node) -> str:
    if isinstance(node, URIRef):
        return f"<{node}>"
    first = g.value(node, RDF.first)
    if first is not None:
        return "/".join(_path(g, n) for n in Collection(g, node))
    for predicate, template in (
        (SH.inversePath, "^{}"),
        (SH.zeroOrMorePath, "({})*"),
        (SH.oneOrMorePath, "({})+"),
        (SH.zeroOrOnePath, "({})?"),
    ):
        inner = g.value(node, predicate)
        if inner is not None:
            return template.format(_path(g, inner))
    alternatives = g.value(node, SH.alternativePath)
    if alternatives is not None:
        return "(" + "|".join(_path(g, n) for n in Collection(g, alternatives)) + ")"
    return f"_:{node}"


def _allowed(shapes: Graph, shape: Node | None, component: Node | None) -> list[Any] | None:
    if shape is None or component is None:
        return None
    if component == SH.InConstraintComponent:
        head = shapes.value(shape, SH["in"])
        return None if head is None else [term_json(t) for t in Collection(shapes, head)]
    parameter = _ALTERNATIVES.get(component)  # type: ignore[call-overload]
    if parameter is None:
        return None
    found = sorted((term_json(t) for t in shapes.objects(shape, parameter)), key=str)
    return [_curie(URIRef(v)) if parameter == SH.nodeKind else v for v in found] or None


def _message(report: Graph, result: Node, component: Node | None) -> str:
    messages = [str(m) for m in report.objects(result, SH.resultMessage)]
    if messages:
        return sorted(messages)[0]
    return f"constraint {_curie(component) or 'unknown'} not satisfied"


def issues_of(
    report: Graph,
    shapes: Graph,
    skip_shapes: Iterable[object] = (),
    *,
    only_shapes: frozenset[object] | None = None,
) -> list[Issue]:
    """Structured issues of a report graph, Violations first, then by focus node and path;
    without the results of ``skip_shapes``, and only those of ``only_shapes`` when given."""
    skip = frozenset(skip_shapes)
    out: list[Issue] = []
    # Only the report's own results: nested sh:detail results explain them, they are not extra.
    top = [
        r for node in report.subjects(RDF.type, SH.ValidationReport) for r in report.objects(node, SH.result)
    ]
    for result in top:
        shape = report.value(result, SH.sourceShape)
        if shape in skip or (only_shapes is not None and shape not in only_shapes):
            continue
        component = report.value(result, SH.sourceConstraintComponent)
        severity = report.value(result, SH.resultSeverity)
        out.append(
            Issue(
                severity=SEVERITIES.get(severity, str(severity))
                if isinstance(severity, URIRef)
                else str(severity),
                focus_node=term_json(report.value(result, SH.focusNode)),
                component=_curie(component),
                path=path_text(shapes, report.value(result, SH.resultPath)),
                value=term_json(report.value(result, SH.value)),
                source_shape=term_json(shape),
                message=_message(report, result, component),
                allowed=_allowed(shapes, shape, component),
            )
        )
    order = {"Violation": 0, "Warning": 1, "Info": 2}
    out.sort(
        key=lambda i: (
            order.get(i.severity, 3),
            str(i.focus_node),
            i.path or "",
            i.component or "",
            str(i.value),
        )
    )
    return out


def normalise_shapes(shapes: Graph) -> None:
    """Only ``true`` activates ``sh:uniqueLang`` (SHACL §4.4.4); pySHACL also takes ``"1"``."""
    for triple in list(shapes.triples((None, SH.uniqueLang, None))):
        value = triple[2]
        if not (isinstance(value, Literal) and str(value) == "true" and value.datatype == XSD.boolean):
            shapes.remove(triple)


def _invalid_shapes(exc: object) -> InvalidField:
    message = getattr(exc, "message", None) or str(exc)
    return InvalidField(f"the shapes cannot be evaluated: {message}", field="shapes", reason="invalid_shapes")


class PreparedShapes(ShapesGraph):
    """A ``ShapesGraph`` whose top-level run visits only the shapes that declare targets.

    pySHACL starts a run from every shape and lets the untargeted ones find no focus node; those
    (most property shapes) are only ever reached through the shapes that use them, so leaving
    them out of the start list changes no result and saves their target lookups on every run.
    """

    _targeted: tuple[Shape, ...] | None = None

    @property
    def shapes(self) -> tuple[Shape, ...]:
        if self._targeted is None:
            every = list(super().shapes)
            self._targeted = tuple(s for s in every if any(list(t) for t in s.target()))
        return self._targeted


def prepare(shapes: Graph) -> ShapesGraph:
    """pySHACL's parsed form of ``shapes`` (every ``Shape`` and custom constraint), built once.

    Harvesting the shapes is a large share of a small validation, and nothing in a built
    ``ShapesGraph`` depends on the data graph (constraint components are made per run, shapes hold
    no per-run state without SHACL-AF), so one prepared graph serves every later validation,
    from any thread. pySHACL adds two system axioms to the graph here; afterwards validations
    only read it. ``shapes`` must not change once prepared.
    """
    normalise_shapes(shapes)
    try:
        prepared = PreparedShapes(shapes)
        prepared.shapes  # noqa: B018 - the property harvests and caches every shape
        prepared.custom_constraints  # noqa: B018 - likewise, so no run builds it concurrently
    except QuipuError:
        raise
    except Exception as exc:  # pyshacl's ShapeLoadError, ConstraintLoadError, ReportableRuntimeError
        raise _invalid_shapes(exc) from None
    return prepared


@functools.cache
def _pyshacl_ready() -> None:
    # What pyshacl.validate does first on every call; once per process is enough.
    assign_baked_in()  # type: ignore[no-untyped-call]


def _options() -> dict[str, Any]:
    # pyshacl.validate's options for: no inference, no ontology mixing, every result counts.
    return {
        "inference": "none",
        "inplace": True,  # the delta graph is ours and is never mutated by a plain SHACL run
        "abort_on_first": False,
        "allow_infos": False,
        "allow_warnings": False,
        "advanced": False,
    }


def validate(
    data: Graph, shapes: Graph, *, skip_shapes: Iterable[object] = (), prepared: ShapesGraph | None = None
) -> Report:
    """Validate ``data`` (any rdflib graph, the store view included) against ``shapes``.

    No inference, no ontology mixing, warnings and infos count as results; results of
    ``skip_shapes`` (the "emit" shapes of a gate) are left out. ``prepared`` is ``shapes`` already
    through ``prepare`` (cached with a bundle); without it the shapes are prepared for this run.
    """
    return Report(issues_of(run_report(data, shapes, prepared), shapes, skip_shapes))


def run_report(data: Graph, shapes: Graph, prepared: ShapesGraph | None = None) -> Graph:
    """pySHACL's report graph of one run. ``pyshacl.validate`` would rebuild the shapes on
    every call; this runs its ``Validator`` over the prepared ones instead."""
    _pyshacl_ready()
    if prepared is None:
        prepared = prepare(shapes)
    for prefix, namespace in shapes.namespaces():
        # SPARQL-based constraints may use the shapes' own prefixes (pySHACL resolves them
        # through the data graph's bindings); the store view keeps no document prefixes.
        if prefix and data.namespace_manager.store.namespace(prefix) is None:
            data.bind(prefix, namespace, override=False)
    try:
        # The Validator builds a ShapesGraph of what it is given: give it an empty one, then
        # hand it the prepared shapes (``shacl_graph`` is the attribute its run reads).
        validator = Validator(
            DataGraph.from_rdflib(data), shacl_graph=Graph(bind_namespaces="none"), options=_options()
        )
        validator.shacl_graph = prepared
        _conforms, report, _text = validator.run()  # type: ignore[no-untyped-call]
    except QuipuError:
        raise
    except ValidationFailure as failure:  # pySHACL's "failure" outcome of shapes it refuses
        raise _invalid_shapes(failure) from None
    except Exception as exc:  # shapes pySHACL cannot evaluate (unsupported SPARQL, bad constraints)
        raise _invalid_shapes(exc) from None
    assert isinstance(report, Graph)
    return report
