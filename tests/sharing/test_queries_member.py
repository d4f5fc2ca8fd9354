"""The ``queries.ttl`` share member (tools-graphs-governance §4.0.4) and the query-install rule of
``quipu_import`` (§4.2 step 10), over a real store: selection, the exact bytes, the strict read
and installation inside an open write transaction."""

from __future__ import annotations

import hashlib
import re
from typing import Any

import pytest
from sqlalchemy import func, select

from quipu.api import KnowledgeBase
from quipu.errors import BadRequest, InvalidField
from quipu.graphs import stored_queries
from quipu.graphs.query_params import NamedQuery, ParamSpec
from quipu.sharing import queries_member as qm
from quipu.store import stored_queries as rows
from quipu.store.schema import stored_queries as queries_table

EX = "http://ex.org/"
DS = EX + "ds"
G1, G2 = EX + "g1", EX + "g2"
T1, T2, T3 = "2026-02-01T00:00:00Z", "2026-03-01T00:00:00Z", "2026-04-01T00:00:00Z"
TYPED = f"""SELECT ?s WHERE {{
  ?s a <{EX}Person> ; a <{{type}}> .
  FILTER(?s != <{EX}x>)
}} LIMIT {{limit}}"""
TYPED_PARAMS: list[dict[str, Any]] = [
    {"name": "type", "type": "iri", "required": True, "description": "a class"},
    {"name": "limit", "type": "int", "default": "5", "description": "at most"},
]
QUOTED = f'SELECT ?s WHERE {{ ?s a <{EX}B> , <{EX}A> ; <{EX}label> "say \\"hi\\"" }}'
PLAIN = "SELECT ?s WHERE { ?s ?p ?o }"

GOLDEN = r'''@prefix dct: <http://purl.org/dc/terms/> .
@prefix quipu: <https://quipu.dev/ontology/> .

<urn:quipu:query:people%2Fby%20type> a quipu:StoredQuery ;
  quipu:queryName "people/by type" ;
  quipu:queryForm "SELECT" ;
  dct:description "instances of a \"class\"" ;
  quipu:targetsClass <http://ex.org/Person> ;
  quipu:parameter [ a quipu:QueryParameter ; quipu:parameterName "type" ; quipu:parameterIndex 0 ;
                    quipu:parameterKind "iri" ; quipu:required true ;
                    dct:description "a class" ] ;
  quipu:parameter [ a quipu:QueryParameter ; quipu:parameterName "limit" ; quipu:parameterIndex 1 ;
                    quipu:parameterKind "int" ; quipu:required false ;
                    quipu:defaultValue "5" ; dct:description "at most" ] ;
  quipu:sparqlTemplate """SELECT ?s WHERE {
  ?s a <http://ex.org/Person> ; a <{type}> .
  FILTER(?s != <http://ex.org/x>)
} LIMIT {limit}""" .

<urn:quipu:query:zeta> a quipu:StoredQuery ;
  quipu:queryName "zeta" ;
  quipu:queryForm "SELECT" ;
  quipu:targetsClass <http://ex.org/A> ;
  quipu:targetsClass <http://ex.org/B> ;
  quipu:sparqlTemplate """SELECT ?s WHERE { ?s a <http://ex.org/B> , <http://ex.org/A> ; <http://ex.org/label> \"say \\\"hi\\\"\" }""" .
'''


def load(kb: KnowledgeBase, name: str, template: str = PLAIN, **fields: Any) -> None:
    stored_queries.load(
        kb.db,
        name,
        template,
        fields.get("description"),
        fields.get("dataset"),
        fields.get("params"),
        fields.get("timestamp", T1),
    )


def golden_store(kb: KnowledgeBase) -> None:
    load(kb, "zeta", QUOTED)
    load(kb, "people/by type", TYPED, description='instances of a "class"', params=TYPED_PARAMS)


def named(name: str, template: str = PLAIN, description: str = "", *params: ParamSpec) -> NamedQuery:
    return NamedQuery(name, description, template, params, "stored")


def carried(*queries: NamedQuery) -> list[qm.CarriedQuery]:
    text = qm.render(list(queries))
    assert text is not None
    return qm.parse(text)


# -- render ----------------------------------------------------------------------------------------


def test_render_writes_the_exact_layout_sorted_by_name(kb: KnowledgeBase) -> None:
    golden_store(kb)
    chosen = qm.select(kb.db, scope_kind="root", scope_value=None, names=None)
    assert [q.name for q in chosen] == ["people/by type", "zeta"]
    assert qm.render(chosen) == GOLDEN
    assert qm.render(list(reversed(chosen))) == GOLDEN  # input order never shows


def test_subject_percent_encodes_every_utf8_byte_outside_the_unreserved_set() -> None:
    assert qm.subject("Az09-._~") == "urn:quipu:query:Az09-._~"
    assert qm.subject("a/b c%é?#") == "urn:quipu:query:a%2Fb%20c%25%C3%A9%3F%23"


def test_render_of_no_queries_is_no_member() -> None:
    assert qm.render([]) is None


def test_changing_one_template_changes_the_bytes_and_nothing_else(kb: KnowledgeBase) -> None:
    golden_store(kb)
    before = qm.render(qm.select(kb.db, scope_kind="root", scope_value=None, names=None))
    load(kb, "zeta", QUOTED.replace("say", "tell"), timestamp=T2)
    after = qm.render(qm.select(kb.db, scope_kind="root", scope_value=None, names=None))
    assert before is not None and after is not None and before != after
    assert after == before.replace("say", "tell")


# -- parse -----------------------------------------------------------------------------------------


def test_parse_reads_back_what_render_wrote() -> None:
    back = qm.parse(GOLDEN)
    assert [q.name for q in back] == ["people/by type", "zeta"]
    people, zeta = back
    assert people.description == 'instances of a "class"'
    assert people.template == TYPED
    assert people.params == (
        ParamSpec("type", "iri", True, None, "a class"),
        ParamSpec("limit", "int", False, "5", "at most"),
    )
    assert (people.form, people.targets) == ("SELECT", (EX + "Person",))
    assert zeta.template == QUOTED
    assert (zeta.description, zeta.params, zeta.targets) == ("", (), (EX + "A", EX + "B"))
    assert qm.render(back) == GOLDEN


HEAD = "@prefix dct: <http://purl.org/dc/terms/> .\n@prefix quipu: <https://quipu.dev/ontology/> .\n"
ZETA = "<urn:quipu:query:zeta>"


def _query(subject: str, name: str, template: str, extra: str = "", form: str = "SELECT") -> str:
    return (
        f'{subject} a quipu:StoredQuery ; quipu:queryName "{name}" ; quipu:queryForm "{form}" ;'
        f' {extra} quipu:sparqlTemplate """{template}""" .\n'
    )


def _param(body: str) -> str:
    return f"quipu:parameter [ a quipu:QueryParameter ; {body} ] ;"


def _one_param(template: str = "", **fields: str) -> str:
    """A member of one query with one parameter: ``v``, index 0, text, required, unless ``fields``
    (quipu: local names to Turtle objects) say otherwise."""
    given = {"parameterName": '"v"', "parameterIndex": "0", "parameterKind": '"text"', "required": "true"}
    body = " ; ".join(f"quipu:{key} {value}" for key, value in {**given, **fields}.items())
    return HEAD + _query(ZETA, "zeta", template or ONE_PARAM, _param(body))


ONE_PARAM = f"SELECT ?s WHERE {{ ?s <{EX}p> '{{v}}' }}"
STRICT_CASES: dict[str, tuple[str, str]] = {
    "not turtle": ("<urn:quipu:query:zeta> a", "does not parse as Turtle"),
    "stray subject": (HEAD + _query(ZETA, "zeta", PLAIN) + '<urn:x> <urn:p> "v" .', "neither a stored query"),
    "stray blank node": (HEAD + _query(ZETA, "zeta", PLAIN) + '[] <urn:p> "v" .', "neither a stored query"),
    "foreign predicate": (
        HEAD + _query(ZETA, "zeta", PLAIN, '<http://www.w3.org/2000/01/rdf-schema#label> "z" ;'),
        "which a stored-query description does not have",
    ),
    "parameter predicate on a query": (
        HEAD + _query(ZETA, "zeta", PLAIN, 'quipu:parameterName "z" ;'),
        "which a stored-query description does not have",
    ),
    "second type": (HEAD + _query(ZETA, "zeta", PLAIN, f"a <{EX}Other> ;"), "must be typed exactly"),
    "declared form differs": (HEAD + _query(ZETA, "zeta", PLAIN, form="ASK"), "declares form ASK"),
    "undeclared target": (
        HEAD + _query(ZETA, "zeta", f"SELECT ?s WHERE {{ ?s a <{EX}A> }}"),
        "but its template is a SELECT query targeting",
    ),
    "target the template lacks": (
        HEAD + _query(ZETA, "zeta", PLAIN, f"quipu:targetsClass <{EX}A> ;"),
        "but its template is a SELECT query targeting",
    ),
    "duplicate name": (
        HEAD + _query(ZETA, "zeta", PLAIN) + _query("<urn:quipu:query:%7Aeta>", "zeta", PLAIN),
        "described twice",
    ),
    "subject does not match": (HEAD + _query("<urn:quipu:query:other>", "zeta", PLAIN), "does not identify"),
    "lower-case percent escape": (
        HEAD + _query("<urn:quipu:query:a%2fb>", "a/b", PLAIN),
        "does not identify",
    ),
    "two names": (HEAD + _query(ZETA, "zeta", PLAIN, 'quipu:queryName "other" ;'), "more than one"),
    "language-tagged name": (
        HEAD + f'{ZETA} a quipu:StoredQuery ; quipu:queryName "zeta"@en ; quipu:queryForm "SELECT" ;'
        f' quipu:sparqlTemplate """{PLAIN}""" .',
        "plain string literal",
    ),
    "no template": (
        HEAD + f'{ZETA} a quipu:StoredQuery ; quipu:queryName "zeta" ; quipu:queryForm "SELECT" .',
        "has no",
    ),
    "sparql update": (
        HEAD + _query(ZETA, "zeta", "DELETE WHERE { ?s ?p ?o }"),
        "is a SPARQL Update",
    ),
    "not sparql": (HEAD + _query(ZETA, "zeta", "SELECT nothing"), "does not parse as SPARQL"),
    "not a select": (
        HEAD + _query(ZETA, "zeta", "ASK { ?s ?p ?o }", form="ASK"),
        "cannot be a stored query here",
    ),
    "placeholder without a parameter": (
        HEAD + _query(ZETA, "zeta", ONE_PARAM),
        "queries.ttl",
    ),
    "parameter not a blank node": (
        HEAD + _query(ZETA, "zeta", PLAIN, "quipu:parameter <urn:p> ;") + "<urn:p> a quipu:QueryParameter .",
        "must be a blank node",
    ),
    "parameter index gap": (_one_param(parameterIndex="1"), "parameter indexes are not 0..0"),
    "parameter index as a string": (
        _one_param(parameterIndex='"0"'),
        "must be an <http://www.w3.org/2001/XMLSchema#integer> literal",
    ),
    "unknown kind": (_one_param(parameterKind='"date"'), "is not one of iri, text, int"),
    "optional without default": (_one_param(required="false"), "has no defaultValue"),
    "default of the wrong kind": (
        _one_param(
            "SELECT ?s WHERE { ?s ?p ?o } LIMIT {n}",
            parameterName='"n"',
            parameterKind='"int"',
            required="false",
            defaultValue='"many"',
        ),
        "is not an integer",
    ),
    "parameter on the wrong node kind": (
        _one_param(queryForm='"SELECT"'),
        "which a stored-query description does not have",
    ),
}


@pytest.mark.parametrize("case", sorted(STRICT_CASES))
def test_parse_refuses_anything_but_stored_queries_as_described(case: str) -> None:
    text, phrase = STRICT_CASES[case]
    with pytest.raises(BadRequest) as refused:
        qm.parse(text)
    assert refused.value.status == 400
    assert refused.value.field == "queries_turtle"
    assert phrase in refused.value.message


def test_parse_accepts_a_member_written_by_hand_in_another_layout() -> None:
    text = HEAD + _query(
        ZETA,
        "zeta",
        ONE_PARAM,
        _param(
            'quipu:parameterIndex 0 ; quipu:required true ; quipu:parameterKind "text" ; quipu:parameterName "v"'
        ),
    )
    (query,) = qm.parse(text)
    assert query.params == (ParamSpec("v", "text", True, None, ""),)


def test_a_parameter_node_shared_by_two_queries_is_refused() -> None:
    shared = "quipu:parameter _:p ;"
    text = (
        HEAD
        + _query(ZETA, "zeta", ONE_PARAM, shared)
        + _query("<urn:quipu:query:eta>", "eta", ONE_PARAM, shared)
        + '_:p a quipu:QueryParameter ; quipu:parameterName "v" ; quipu:parameterIndex 0 ;'
        ' quipu:parameterKind "text" ; quipu:required true .'
    )
    with pytest.raises(BadRequest, match="belongs to another query"):
        qm.parse(text)


# -- select ----------------------------------------------------------------------------------------


def _insert_update(kb: KnowledgeBase, name: str) -> None:
    """A registry row no load would accept (an Update), as a store written by other means might hold."""
    with kb.db.write() as ctx:
        rows.open_version(ctx, rows.QueryRow(name, "", "DELETE WHERE { ?s ?p ?o }", None, T1, None, 0, ()))


def test_the_default_selection_follows_the_dataset_scope(kb: KnowledgeBase) -> None:
    kb.create_graph(G1)
    kb.create_graph(G2)
    kb.graphs.datasets(action="create", name=DS, members=[G1])
    load(kb, "open")
    load(kb, "scoped", dataset=DS)

    def chosen(kind: str, value: str | None) -> list[str]:
        return [q.name for q in qm.select(kb.db, scope_kind=kind, scope_value=value, names=None)]

    assert chosen("root", None) == ["open"]
    assert chosen("group", "grp") == ["open"]
    assert chosen("construct", "CONSTRUCT WHERE { ?s ?p ?o }") == ["open"]
    assert chosen("graph", G1) == ["scoped"]  # a member of the query's dataset
    assert chosen("graph", G2) == []  # neither unscoped nor in the dataset
    (query,) = qm.select(kb.db, scope_kind="graph", scope_value=G1, names=None)
    assert query.dataset is None  # producer-local layout is dropped


def test_an_explicit_list_replaces_the_default_and_empty_carries_none(kb: KnowledgeBase) -> None:
    load(kb, "open")
    load(kb, "scoped", dataset=DS)
    picked = qm.select(kb.db, scope_kind="root", scope_value=None, names=["scoped", "scoped"])
    assert [(q.name, q.dataset) for q in picked] == [("scoped", None)]
    assert qm.select(kb.db, scope_kind="root", scope_value=None, names=[]) == []
    assert qm.render(qm.select(kb.db, scope_kind="root", scope_value=None, names=[])) is None
    with pytest.raises(BadRequest, match="no such stored query: missing") as refused:
        qm.select(kb.db, scope_kind="root", scope_value=None, names=["open", "missing"])
    assert refused.value.status == 400


def test_a_sparql_update_is_refused_when_selected(kb: KnowledgeBase) -> None:
    _insert_update(kb, "wipe")
    for names in (["wipe"], None):
        with pytest.raises(BadRequest, match="'wipe' is a SPARQL Update") as refused:
            qm.select(kb.db, scope_kind="root", scope_value=None, names=names)
        assert refused.value.status == 400
    with pytest.raises(BadRequest, match="is a SPARQL Update"):
        qm.render([named("wipe", "INSERT DATA { <urn:a> <urn:b> <urn:c> }")])


# -- install ---------------------------------------------------------------------------------------


def install(
    kb: KnowledgeBase,
    queries: list[qm.CarriedQuery],
    *,
    replace: bool = False,
    at: str = T2,
    eligible: bool = True,
    namespace: str = "demo",
) -> dict[str, Any]:
    with kb.db.write() as ctx:
        return qm.install(
            kb.db,
            ctx,
            queries,
            namespace=namespace,
            replace=replace,
            at=at,
            eligible=eligible,
            off_vocabulary_of=lambda q: [t for t in q.targets if t != EX + "A"],
        )


def versions(kb: KnowledgeBase) -> int:
    with kb.db.read() as conn:
        return int(conn.execute(select(func.count()).select_from(queries_table)).scalar_one())


def current(kb: KnowledgeBase) -> dict[str, str]:
    with kb.db.read() as conn:
        return {row.name: row.template for row in rows.current(conn)}


def report(**lists: Any) -> dict[str, Any]:
    empty: dict[str, Any] = {k: [] for k in ("installed", "unchanged", "replaced", "removed", "stale")}
    return {"namespace": "demo", **empty, "collisions": [], "quarantined": [], **lists}


TYPED_SPECS = (ParamSpec("type", "iri", True, None, "a class"), ParamSpec("limit", "int", False, "5", ""))
A = named("a", f"SELECT ?s WHERE {{ ?s a <{EX}A> }}", "as")
B = named("b", TYPED, "typed", *TYPED_SPECS)
C = named("c")


def test_install_namespaces_and_never_touches_a_bare_local_name(kb: KnowledgeBase) -> None:
    load(kb, "a", "SELECT ?local WHERE { ?local ?p ?o }")
    assert install(kb, carried(A, B, C)) == report(installed=["demo/a", "demo/b", "demo/c"])
    found = current(kb)
    assert found["a"] == "SELECT ?local WHERE { ?local ?p ?o }"
    assert (found["demo/a"], found["demo/b"]) == (A.template, TYPED)
    installed = stored_queries.current(kb.db, "demo/b")
    assert installed is not None
    assert (installed.description, installed.params, installed.dataset) == ("typed", TYPED_SPECS, None)


def test_a_second_identical_import_installs_nothing(kb: KnowledgeBase) -> None:
    install(kb, carried(A, B))
    before = versions(kb)
    assert install(kb, carried(A, B), at=T3) == report(unchanged=["demo/a", "demo/b"])
    assert install(kb, carried(A, B), at=T3, replace=True) == report(unchanged=["demo/a", "demo/b"])
    assert versions(kb) == before


def test_a_differing_definition_collides_and_the_local_one_is_kept(kb: KnowledgeBase) -> None:
    install(kb, carried(A, B, C))
    changed = named("b", TYPED.replace("LIMIT", "OFFSET 1 LIMIT"), "typed", *TYPED_SPECS)
    assert install(kb, carried(A, changed), at=T3) == report(
        unchanged=["demo/a"], stale=["demo/c"], collisions=[{"name": "b", "local": "demo/b"}]
    )
    assert current(kb)["demo/b"] == TYPED
    assert "demo/c" in current(kb)  # stale: reported, left in place


def test_replace_takes_the_packs_version_and_closes_what_it_dropped(kb: KnowledgeBase) -> None:
    load(kb, "c")  # bare: outside the namespace, never closed
    install(kb, carried(A, B, C))
    changed = named("b", TYPED, "retitled", *TYPED_SPECS)
    assert install(kb, carried(A, changed), replace=True, at=T3) == report(
        unchanged=["demo/a"], replaced=["demo/b"], removed=["demo/c"]
    )
    assert "demo/c" not in current(kb) and "c" in current(kb)
    replaced = stored_queries.current(kb.db, "demo/b")
    assert replaced is not None and replaced.description == "retitled"
    with kb.db.read() as conn:  # history is kept: closed versions stay as rows
        closed = conn.execute(
            select(queries_table.c.name, queries_table.c.valid_to).where(
                queries_table.c.valid_to.is_not(None)
            )
        ).all()
    assert sorted(closed) == [("demo/b", T3), ("demo/c", T3)]


def test_another_namespace_is_a_separate_set_of_names(kb: KnowledgeBase) -> None:
    install(kb, carried(A))
    out = install(kb, carried(B), namespace="other", replace=True)
    assert out["installed"] == ["other/b"] and out["removed"] == []
    assert {"demo/a", "other/b"} <= set(current(kb))


def test_replacing_a_version_from_a_later_instant_is_refused(kb: KnowledgeBase) -> None:
    install(kb, carried(A, B), at=T3)
    with pytest.raises(BadRequest, match="versions only move forward"):
        install(kb, carried(named("a", PLAIN)), replace=True, at=T2)
    assert current(kb)["demo/a"] == A.template  # the write rolled back


def test_a_quarantined_import_installs_nothing_and_holds_every_query_back(kb: KnowledgeBase) -> None:
    off = named("off", f"SELECT ?s WHERE {{ ?s a <{EX}A> , <{EX}Z> }}")
    out = install(kb, carried(off, A, C), eligible=False)
    assert out == report(
        quarantined=[
            {"name": "a", "off_vocabulary": []},
            {"name": "c", "off_vocabulary": []},
            {"name": "off", "off_vocabulary": [EX + "Z"]},
        ]
    )
    assert current(kb) == {}


def test_off_vocabulary_targets_lists_unsanctioned_classes_once() -> None:
    queries = carried(A, named("z", f"SELECT ?s WHERE {{ ?s a <{EX}Z> , <{EX}A> }}"), C)
    assert qm.off_vocabulary_targets(queries, frozenset({EX + "A"})) == [EX + "Z"]
    assert qm.off_vocabulary_targets(queries, frozenset({EX + "A", EX + "Z"})) == []


# -- namespaces ------------------------------------------------------------------------------------


@pytest.mark.parametrize("namespace", ["demo", "pack-0123456789ab", "a.b_c-1", "x" * 64])
def test_a_single_segment_namespace_is_accepted(namespace: str) -> None:
    qm.check_namespace(namespace)


@pytest.mark.parametrize("namespace", ["", "a/b", "/", "..", "a..b", ".", "x" * 65, "é", "a b", "a\\b"])
def test_a_namespace_that_is_not_one_segment_is_refused(namespace: str) -> None:
    with pytest.raises(InvalidField) as refused:
        qm.check_namespace(namespace)
    assert refused.value.field == "query_namespace"
    assert refused.value.status == 400


def test_the_default_namespace_keys_on_the_producers_store_id() -> None:
    expected = "pack-" + hashlib.sha256(b"store-1").hexdigest()[:12]
    assert qm.default_namespace("store-1") == expected
    assert re.fullmatch(r"pack-[0-9a-f]{12}", qm.default_namespace("store-2"))
    qm.check_namespace(expected)
