"""The owl extra's routes (tools-graphs-governance §8): ``POST /ontology`` (write, every action,
list included) and ``POST /explain`` (read). Both exist in every install: without the extra they
answer 400 ``owl_not_installed`` naming the missing feature, never 404. Annotating: unknown keys
come back as ``ignored_fields``. The work lives in ``quipu.owl`` (``kb.owl``).
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter
from pydantic import Field

from quipu.rest.deps import AuthDep, KbDep
from quipu.rest.fields import Annotating

router = APIRouter(tags=["owl"])


class OntologyRequest(Annotating):
    action: str | None = Field(None, description="load, list (default), remove or materialize")
    name: str | None = Field(None, description="the ontology's name (load, remove)")
    turtle: str | None = Field(None, description="the OWL ontology in Turtle (load)")
    timestamp: str | None = Field(None, description="when the version opens or closes (default: now)")


class ExplainRequest(Annotating):
    s: str = Field(description="subject IRI of the fact")
    p: str = Field(description="predicate IRI of the fact")
    o: str = Field(description="object: an IRI when it names a known term, else a plain string literal")
    depth: int = Field(5, description="recursion depth of the walk into premises (0 to 10)")


@router.post("/ontology")
def ontology(body: OntologyRequest, kb: KbDep, auth: AuthDep) -> dict[str, Any]:
    """Manage stored OWL ontologies: load (store and materialise), list, remove, materialize."""
    return body.annotate(kb.owl.ontology(**body.fields(), auth=auth))


@router.post("/explain")
def explain(body: ExplainRequest, kb: KbDep) -> dict[str, Any]:
    """Why a current ROOT fact holds: its transaction and source, and for a derived fact the rule
    or OWL families that still derive it, recursing into their premises."""
    return body.annotate(kb.owl.explain(**body.fields()))
