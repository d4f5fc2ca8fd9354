"""The outward scrub (tools-graphs-governance §4.1, the outward-scrub rule): block-tier
``aegis:InternalIdentifierPattern`` rules in ROOT refuse a matching share, over a real store."""

from __future__ import annotations

import pytest

from quipu.api import KnowledgeBase
from quipu.errors import BadRequest, Forbidden
from quipu.sharing import scrub

EX = "http://ex.org/"
PREFIXES = """@prefix aegis: <http://aegis.gastown.local/ontology/> .
@prefix rdfs: <http://www.w3.org/2000/01/rdf-schema#> .
"""


def rule(name: str, regex: str, tier: str = "block", label: str | None = None) -> str:
    labelled = f' ; rdfs:label "{label}"' if label is not None else ""
    return (
        f'<{EX}{name}> a aegis:InternalIdentifierPattern ; aegis:regex "{regex}" ;'
        f' aegis:enforcementTier "{tier}"{labelled} .\n'
    )


def catalogue(kb: KnowledgeBase, *rules: str, graph: str | None = None) -> None:
    if graph is not None:
        kb.create_graph(graph)
    kb.knot(PREFIXES + "".join(rules), graph=graph)


def refusal(kb: KnowledgeBase, members: dict[str, str]) -> Forbidden:
    with pytest.raises(Forbidden) as refused:
        scrub.scrub(kb.db, members)
    assert refused.value.status == 403
    return refused.value


LEAKY = '<urn:leak> <urn:p> "déjà vu at private.example" .\n'


def test_a_block_rule_refuses_naming_member_rule_and_byte_range(kb: KnowledgeBase) -> None:
    catalogue(kb, rule("host", "private[.]example", label="private host"))
    found = refusal(kb, {"export.nt": LEAKY, "shapes.ttl": ""})
    start = LEAKY.encode().index(b"private.example")  # bytes, not characters: "déjà" is 6 bytes
    assert start != LEAKY.index("private.example")
    assert found.body()["member"] == "export.nt"
    assert found.body()["pattern"] == "private host"
    assert found.body()["byte_range"] == [start, start + len("private.example")]
    assert "export.nt" in found.message and "private host" in found.message
    assert f"{start}-{start + 15}" in found.message
    # never quoted: the identifier, or the regex that spells it
    assert "private.example" not in str(found.body()) and "private[.]example" not in str(found.body())


def test_a_warning_tier_rule_never_blocks(kb: KnowledgeBase) -> None:
    catalogue(kb, rule("host", "private[.]example", tier="warn", label="private host"))
    scrub.scrub(kb.db, {"export.nt": LEAKY})


def test_no_rules_means_the_share_passes(kb: KnowledgeBase) -> None:
    scrub.scrub(kb.db, {"export.nt": LEAKY, "shapes.ttl": "private.example"})


def test_a_clean_share_passes_a_loaded_catalogue(kb: KnowledgeBase) -> None:
    catalogue(kb, rule("host", "private[.]example", label="private host"))
    scrub.scrub(kb.db, {"export.nt": '<urn:a> <urn:p> "public.example" .\n', "shapes.ttl": ""})


def test_manifest_json_is_never_scrubbed(kb: KnowledgeBase) -> None:
    catalogue(kb, rule("host", "private[.]example", label="private host"))
    scrub.scrub(kb.db, {"manifest.json": '{"source":"private.example"}\n', "export.nt": ""})


def test_only_root_rules_count(kb: KnowledgeBase) -> None:
    catalogue(kb, rule("host", "private[.]example", label="private host"), graph=EX + "staged")
    scrub.scrub(kb.db, {"export.nt": LEAKY})


def test_the_first_member_by_name_and_its_earliest_match_are_named(kb: KnowledgeBase) -> None:
    catalogue(
        kb,
        rule("late", "zzz", label="late rule"),
        rule("early", "aaa", label="early rule"),
    )
    found = refusal(kb, {"shapes.ttl": "aaa", "export.nt": "..zzz..aaa", "queries.ttl": "zzz"})
    assert found.body()["member"] == "export.nt"
    assert (found.body()["pattern"], found.body()["byte_range"]) == ("late rule", [2, 5])


def test_an_unlabelled_rule_is_named_by_its_iri_and_a_zero_width_match_names_nothing(
    kb: KnowledgeBase,
) -> None:
    catalogue(kb, rule("bare", "\\\\bsecret\\\\b"), rule("edge", "\\\\b"))
    found = refusal(kb, {"export.nt": "a secret"})
    assert (found.body()["pattern"], found.body()["byte_range"]) == (EX + "bare", [2, 8])


@pytest.mark.parametrize(
    ("regex", "phrase"),
    [
        ("(unclosed", "not a valid Python regular expression"),
        ("(a+)+b", "nests one wide repetition"),
        ("(\\\\w+\\\\s?)*x", "nests one wide repetition"),
        ("(a)\\\\1", "backreference"),
        ("x(?=y)", "lookaround"),
        ("x*", "matches the empty string"),
        ("a" * 2049, "longer than 2048"),
    ],
)
def test_a_rule_that_cannot_be_run_safely_refuses_the_share(
    kb: KnowledgeBase, regex: str, phrase: str
) -> None:
    catalogue(kb, rule("bad", regex, label="bad rule"))
    with pytest.raises(BadRequest) as refused:
        scrub.scrub(kb.db, {"export.nt": "nothing to see"})
    assert refused.value.status == 400
    assert phrase in refused.value.message and "'bad rule'" in refused.value.message


@pytest.mark.parametrize(
    "regex", ["10[.]\\\\d{1,3}[.]\\\\d{1,3}", "[a-z0-9.-]+[.]corp[.]example", "(?:ab){2,64}"]
)
def test_linear_patterns_are_accepted(kb: KnowledgeBase, regex: str) -> None:
    catalogue(kb, rule("ok", regex, label="fine"))
    scrub.scrub(kb.db, {"export.nt": "nothing to see"})
