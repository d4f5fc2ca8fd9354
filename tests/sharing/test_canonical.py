"""RDFC-1.0 canonical N-Quads (quipu.sharing.canonical): the bytes of a share's export.nt."""

from __future__ import annotations

import random
import re

import pytest

from quipu.errors import BadRequest, RdfParseError
from quipu.sharing import canonical
from quipu.sharing.canonical import CanonicalisationTooComplex, canonical_nquads, is_canonical

pytestmark = pytest.mark.backend_independent

XSD = "http://www.w3.org/2001/XMLSchema#"

# A small graph with two interchangeable-looking blank nodes told apart by their neighbours.
GRAPH = """\
<urn:ex:alice> <urn:ex:knows> _:x .
_:x <urn:ex:name> "Bob" .
_:x <urn:ex:address> _:y .
_:y <urn:ex:city> "Lima" .
<urn:ex:alice> <urn:ex:name> "Alice" .
"""


def _relabel(text: str, rng: random.Random) -> str:
    """``text`` with fresh blank-node labels and its lines shuffled: the same graph."""
    labels = sorted(set(re.findall(r"_:([A-Za-z0-9]+)", text)))
    fresh = [f"n{rng.randrange(10**6)}x{i}" for i in range(len(labels))]
    rng.shuffle(fresh)
    renamed = dict(zip(labels, fresh, strict=True))
    lines = [
        re.sub(r"_:([A-Za-z0-9]+)", lambda m: "_:" + renamed[m.group(1)], line) for line in text.splitlines()
    ]
    rng.shuffle(lines)
    return "\n".join(lines) + "\n"


def test_blank_node_labels_and_order_do_not_change_the_bytes() -> None:
    expected = canonical_nquads(GRAPH)
    rng = random.Random(20240521)
    for _ in range(25):
        assert canonical_nquads(_relabel(GRAPH, rng)) == expected
    assert set(re.findall(r"_:\S+", expected)) == {"_:c14n0", "_:c14n1"}


def test_the_form_is_sorted_lines_each_ending_with_space_dot_newline() -> None:
    out = canonical_nquads(GRAPH)
    lines = out.split("\n")
    assert lines[-1] == "" and all(line.endswith(" .") for line in lines[:-1])
    assert lines[:-1] == sorted(lines[:-1])
    assert len(lines) - 1 == 5


def test_symmetric_blank_nodes_get_one_form() -> None:
    ring = "_:a <urn:ex:next> _:b .\n_:b <urn:ex:next> _:c .\n_:c <urn:ex:next> _:a .\n"
    rotated = "_:q <urn:ex:next> _:r .\n_:r <urn:ex:next> _:p .\n_:p <urn:ex:next> _:q .\n"
    assert canonical_nquads(ring) == canonical_nquads(rotated)


def test_literals_are_escaped_canonically() -> None:
    text = (
        '<urn:ex:s> <urn:ex:p> "line\\nbreak" .\n'
        '<urn:ex:s> <urn:ex:p> "say \\"hi\\"" .\n'
        '<urn:ex:s> <urn:ex:p> "back\\\\slash" .\n'
        '<urn:ex:s> <urn:ex:p> "caf\\u00E9 \\U0001F600 ∞" .\n'
        '<urn:ex:s> <urn:ex:p> "tab\\tcr\\rbell\\u0007del\\u007f" .\n'
        '<urn:ex:s> <urn:ex:p> "quote \\u0022 apostrophe \\\'" .\n'
    )
    out = canonical_nquads(text)
    assert '"line\\nbreak"' in out
    assert '"say \\"hi\\""' in out
    assert '"back\\\\slash"' in out
    assert '"café 😀 ∞"' in out  # non-ASCII stays UTF-8, never \u-escaped
    assert '"tab\\tcr\\rbell\\u0007del\\u007F"' in out  # other controls: \\u with upper-case hex
    assert '"quote \\" apostrophe \'"' in out  # ' needs no escape; " always takes ECHAR
    assert "\n" not in out.replace(" .\n", "")  # every line break inside a literal is escaped


def test_language_tags_and_datatypes() -> None:
    text = (
        '_:b <urn:ex:label> "chat"@FR .\n'
        '_:b <urn:ex:label> "Hello"@en-GB .\n'
        f'_:b <urn:ex:size> "42"^^<{XSD}integer> .\n'
        f'_:b <urn:ex:name> "plain"^^<{XSD}string> .\n'
        '_:b <urn:ex:when> "2024-05-21"^^<urn:ex:date> .\n'
    )
    assert canonical_nquads(text) == (
        '_:c14n0 <urn:ex:label> "Hello"@en-gb .\n'
        '_:c14n0 <urn:ex:label> "chat"@fr .\n'
        '_:c14n0 <urn:ex:name> "plain" .\n'
        f'_:c14n0 <urn:ex:size> "42"^^<{XSD}integer> .\n'
        '_:c14n0 <urn:ex:when> "2024-05-21"^^<urn:ex:date> .\n'
    )


def test_typed_literal_lexical_forms_are_kept() -> None:
    out = canonical_nquads(f'<urn:ex:s> <urn:ex:p> "01"^^<{XSD}integer> .\n')
    assert out == f'<urn:ex:s> <urn:ex:p> "01"^^<{XSD}integer> .\n'


@pytest.mark.parametrize("text", ["", "\n\n", "# only a comment\n", "  \t\n"])
def test_an_empty_graph_is_the_empty_string(text: str) -> None:
    assert canonical_nquads(text) == ""
    assert is_canonical("")


def test_duplicate_triples_collapse() -> None:
    text = '<urn:ex:s> <urn:ex:p> "v" .\n<urn:ex:s> <urn:ex:p> "v" .\n_:a <urn:ex:p> "w" .\n_:a <urn:ex:p> "w" .\n'
    assert canonical_nquads(text) == '<urn:ex:s> <urn:ex:p> "v" .\n_:c14n0 <urn:ex:p> "w" .\n'


def test_named_graphs_are_kept_and_blank_graph_names_relabelled() -> None:
    text = "<urn:ex:s> <urn:ex:p> _:o <urn:ex:g> .\n_:o <urn:ex:p> <urn:ex:v> _:g .\n"
    assert canonical_nquads(text) == (
        "<urn:ex:s> <urn:ex:p> _:c14n0 <urn:ex:g> .\n_:c14n0 <urn:ex:p> <urn:ex:v> _:c14n1 .\n"
    )


def test_is_canonical_accepts_exactly_the_canonical_text() -> None:
    out = canonical_nquads(GRAPH)
    assert is_canonical(out)
    assert not is_canonical(GRAPH)  # unsorted, input labels
    lines = out.splitlines(keepends=True)
    assert not is_canonical("".join(reversed(lines)))  # unsorted
    assert not is_canonical(out.replace("_:c14n0", "_:b0"))  # a non-canonical label
    assert not is_canonical(out.replace("_:c14n0", "_:c14n9"))  # a canonical-looking, wrong label
    assert not is_canonical(out.rstrip("\n"))  # no final newline
    assert not is_canonical(out + out)  # duplicates
    assert not is_canonical(out.replace(" .\n", "  .\n", 1))  # extra space
    assert not is_canonical(out.replace("\n", "\r\n"))


def test_canonical_output_is_a_fixed_point() -> None:
    once = canonical_nquads(GRAPH)
    assert canonical_nquads(once) == once


def test_issued_identifiers_map_the_input_labels() -> None:
    mapping = canonical.issued_identifiers(GRAPH)
    assert set(mapping) == {"x", "y"}
    assert sorted(mapping.values()) == ["c14n0", "c14n1"]
    out = canonical_nquads(GRAPH)
    assert f"<urn:ex:alice> <urn:ex:knows> _:{mapping['x']} .\n" in out


def test_sha384_is_supported() -> None:
    assert canonical_nquads(GRAPH, "SHA384").count("\n") == 5
    assert canonical_nquads(GRAPH, "sha-384") == canonical_nquads(GRAPH, "SHA384")
    with pytest.raises(ValueError, match=r"unknown RDFC-1\.0 hash algorithm"):
        canonical_nquads(GRAPH, "MD5")


def test_malformed_input_names_the_line() -> None:
    text = '<urn:ex:s> <urn:ex:p> "ok" .\n<urn:ex:s> <urn:ex:p> oops .\n'
    with pytest.raises(RdfParseError, match="line 2") as caught:
        canonical_nquads(text)
    assert caught.value.status == 400
    with pytest.raises(RdfParseError):
        is_canonical(text)


@pytest.mark.parametrize(
    "text",
    [
        "<urn:ex:s> <urn:ex:p> <urn:ex:o>\n",  # no dot
        "<relative> <urn:ex:p> <urn:ex:o> .\n",  # not an absolute IRI
        '<urn:ex:s> <urn:ex:p> "unterminated .\n',
        "<urn:ex:s> <urn:ex:p> <urn:ex:o> <urn:ex:g> <urn:ex:extra> .\n",
        "<urn:ex:s> <urn:ex:p> <<( <urn:ex:a> <urn:ex:b> <urn:ex:c> )>> .\n",  # an RDF 1.2 triple term
        '<urn:ex:s> <urn:ex:p> "\ud800" .\n',  # a lone surrogate cannot be UTF-8
    ],
)
def test_malformed_input_is_an_rdf_parse_error(text: str) -> None:
    with pytest.raises(RdfParseError):
        canonical_nquads(text)


def _clique(size: int) -> str:
    return "".join(f"_:n{i} <urn:ex:linked> _:n{j} .\n" for i in range(size) for j in range(size) if i != j)


def test_a_poison_graph_is_refused_as_too_complex() -> None:
    with pytest.raises(CanonicalisationTooComplex, match="too complex to canonicalise") as caught:
        canonical_nquads(_clique(8))
    assert isinstance(caught.value, BadRequest) and caught.value.status == 400
    assert caught.value.reason == "canonicalisation_too_complex"


def test_a_small_symmetric_graph_is_within_the_limit() -> None:
    assert canonical_nquads(_clique(4)).count("\n") == 12


def test_many_identical_blank_nodes_are_within_the_limit() -> None:
    text = "".join(f"_:b{i} <urn:ex:type> <urn:ex:Thing> .\n" for i in range(3000))
    out = canonical_nquads(text)
    assert out.count("\n") == 3000 and "_:c14n2999 " in out


def test_a_long_chain_of_interchangeable_nodes_is_refused_by_depth() -> None:
    length = canonical.MAX_DEPTH + 20
    text = "".join(f'_:l{i} <urn:ex:first> "x" .\n_:l{i} <urn:ex:rest> _:l{i + 1} .\n' for i in range(length))
    with pytest.raises(CanonicalisationTooComplex):
        canonical_nquads(text)
