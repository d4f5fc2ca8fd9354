"""Current plain-string ``rdfs:label`` claims, optionally joined with asserted ``rdf:type``.

The read behind the name-matching tools (tools-search §5.8-§5.10): one statement, in a stable
store order (entity term id, then the label claim's row, then the type claim's row), so "the
first rows" and "the first type row" mean the same thing on every backend.
"""

from __future__ import annotations

from sqlalchemy import Connection, and_, select

from quipu.store import values
from quipu.store.schema import facts, terms
from quipu.store.views import TemporalView, primary


def label_rows(
    conn: Connection, view: TemporalView, label: int, rdf_type: int | None = None
) -> list[tuple[str, str, str]]:
    """``(entity IRI, label, type IRI)`` for every plain-string label claim ``view`` shows, one row
    per asserted type of the entity in the same view (type ``""`` when it has none, or when
    ``rdf_type`` is None and types are not read). Language-tagged and typed labels are left out."""
    if not view.is_current:
        raise ValueError("label rows are read from the current state only")
    lab, typ = facts.alias("lab"), facts.alias("typ")
    subject, klass = terms.alias("subject"), terms.alias("klass")
    # dup = 0: one claim per current statement, so a statement with two owners is one row.
    source = lab.join(subject, subject.c.id == lab.c.e)
    columns = [subject.c.iri, lab.c.v]
    order = [lab.c.e, lab.c.id]
    if rdf_type is not None:
        typed = and_(
            typ.c.e == lab.c.e,
            typ.c.g == lab.c.g,
            typ.c.a == rdf_type,
            typ.c.v_ref.is_not(None),
            primary(typ),
            view.where(typ),
        )
        source = source.outerjoin(typ, typed).outerjoin(klass, klass.c.id == typ.c.v_ref)
        columns.append(klass.c.iri)
        order.append(typ.c.id)
    query = select(*columns).select_from(source).where(view.where(lab), lab.c.a == label, primary(lab))
    out: list[tuple[str, str, str]] = []
    for row in conn.execute(query.order_by(*order)):
        decoded = values.decode(bytes(row[1]))
        if decoded.kind == "str":
            out.append((str(row[0]), str(decoded.value), str(row[2] or "") if rdf_type is not None else ""))
    return out
