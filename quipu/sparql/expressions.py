"""SPARQL expressions as SQL conditions (``ColumnElement[bool]``, NULL for an error) and values
(``Node``). SPARQL's value rules that SQL lacks come from ``quipu.store.sqlfunctions``; a
function with no SQL form is evaluated by rdflib per row (``callbacks``), which makes the plan
"mixed".
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from rdflib import Literal, URIRef, Variable
from rdflib.plugins.sparql.parserutils import CompValue, Expr
from sqlalchemy import (
    ColumnElement,
    and_,
    case,
    cast,
    exists,
    false,
    func,
    literal,
    not_,
    null,
    or_,
    select,
    true,
)
from sqlalchemy.sql.elements import Null
from sqlalchemy.types import BigInteger, LargeBinary, Text

from quipu.errors import BadLiteral
from quipu.sparql import callbacks
from quipu.sparql.relations import (
    MAX_FUNCTION_ARGS,
    UNBOUND,
    UNKNOWN,
    XSD_STRING_REF,
    Col,
    Context,
    Node,
    Rel,
    Unsupported,
    balanced,
    constant,
    encoding,
    eq,
    is_bound,
    is_unbound,
    never_bound,
    same_term,
    shadow_is_value,
)
from quipu.store import sqlfunctions, values
from quipu.store.dialect import text_position, text_suffix, utf8_text
from quipu.store.schema import terms


def iri_text(ctx: Context, id_col: Col) -> Col:
    text: Col = select(terms.c.iri).where(terms.c.id == id_col).scalar_subquery()
    if ctx.const_iris:
        text = func.coalesce(text, case(*((id_col == k, iri) for k, iri in ctx.const_iris.items())))
    return text


def condition(ctx: Context, rel: Rel, expr: Any) -> ColumnElement[bool]:
    """The effective boolean value of ``expr`` as an SQL condition (NULL = a SPARQL error)."""
    got = _expr(ctx, rel, expr)
    if isinstance(got, Node):
        if not got.has_v:
            return literal(None)  # IRIs and blank nodes have no EBV
        return func.q_ebv(encoding(got)) == 1
    return got


def value_of(ctx: Context, rel: Rel, expr: Any) -> Node:
    got = _expr(ctx, rel, expr)
    if isinstance(got, Node):
        return got
    return Node(null(), func.q_bool(case((got, 1), (not_(got), 0))), has_id=False)


class _IriText:
    """A computed IRI known only by its text (DATATYPE): usable in comparisons with IRIs."""

    def __init__(self, text: Col) -> None:
        self.text = text


def _expr(ctx: Context, rel: Rel, expr: Any) -> Node | ColumnElement[bool]:
    if isinstance(expr, Variable):
        name = str(expr)
        found = rel.vars.get(name)
        if found is None:
            found = next((o.vars[name] for o in reversed(ctx.outer) if name in o.vars), UNBOUND)
        return found
    if isinstance(expr, (URIRef, Literal)):
        return constant(ctx, expr)
    if not isinstance(expr, Expr | CompValue):
        raise Unsupported(f"expression {type(expr).__name__}")
    name = expr.name
    handler = _HANDLERS.get(name)
    if handler is None:
        return _via_rdflib(ctx, rel, expr)
    got: Node | ColumnElement[bool] = handler(ctx, rel, expr)
    return got


def _via_rdflib(ctx: Context, rel: Rel, expr: Any) -> Node:
    """A function with no SQL: rdflib evaluates it per row, called from the statement."""
    if not callbacks.can_call(expr):
        raise Unsupported(f"the function {expr.name}")
    names = callbacks.free_variables(expr)
    args: list[Col] = []
    for name in names:
        x = rel.vars.get(name, UNBOUND)
        args.append(encoding(x) if x.has_v else (func.q_ref(x.id) if x.has_id else null()))
        args.append(iri_text(ctx, x.id) if x.has_id else null())
    if len(args) + 1 > MAX_FUNCTION_ARGS:
        raise Unsupported(f"a function of {len(names)} variables")
    key = sqlfunctions.callback_key(callbacks.evaluator(expr, names))
    ctx.mixed = True
    return Node(null(), func.q_call(key, *args), has_id=False)


def _bool(ctx: Context, rel: Rel, expr: Any) -> ColumnElement[bool]:
    got = _expr(ctx, rel, expr)
    if isinstance(got, Node):
        return func.q_ebv(encoding(got)) == 1 if got.has_v else literal(None)
    return got


def _and(ctx: Context, rel: Rel, e: Any) -> ColumnElement[bool]:
    parts = [_bool(ctx, rel, e.expr)] + [_bool(ctx, rel, o) for o in e.other or []]
    return balanced(and_, parts)


def _or(ctx: Context, rel: Rel, e: Any) -> ColumnElement[bool]:
    parts = [_bool(ctx, rel, e.expr)] + [_bool(ctx, rel, o) for o in e.other or []]
    return balanced(or_, parts)


def _not(ctx: Context, rel: Rel, e: Any) -> ColumnElement[bool]:
    return not_(_bool(ctx, rel, e.expr))


def _text_of(ctx: Context, rel: Rel, expr: Any) -> _IriText | None:
    if isinstance(expr, CompValue) and expr.name == "Builtin_DATATYPE":
        x = value_of(ctx, rel, expr.arg)
        return _IriText(func.q_dt(encoding(x)) if x.has_v else literal(None))
    if isinstance(expr, URIRef):
        return _IriText(literal(str(expr)))
    return None


def _equal(ctx: Context, rel: Rel, a: Any, b: Any) -> ColumnElement[bool]:
    ta, tb = _text_of(ctx, rel, a), _text_of(ctx, rel, b)
    if ta is not None and tb is not None:
        return ta.text == tb.text
    if (ta is not None or tb is not None) and any(
        isinstance(t, CompValue) and t.name == "Builtin_DATATYPE" for t in (a, b)
    ):
        raise Unsupported("DATATYPE() compared with a non-IRI")
    x, y = value_of(ctx, rel, a), value_of(ctx, rel, b)
    if never_bound(x) or never_bound(y):
        return UNKNOWN
    if isinstance(b, URIRef) or isinstance(a, URIRef):
        const, other = (y, x) if isinstance(b, URIRef) else (x, y)
        # an IRI equals only itself; any literal is simply different; unbound is an error
        if not other.has_v:
            return eq(other.id, const.id)
        return case((other.id.is_not(None), eq(other.id, const.id)), (other.v.is_not(None), false()))
    if not x.has_v or not y.has_v:
        if not x.has_v and not y.has_v:
            return eq(x.id, y.id)
        return case(
            (and_(is_bound(x), is_bound(y)), func.coalesce(eq(x.id, y.id), false())),
        )
    if x.n is not None and y.n is not None:
        # Different shadows are different numbers; equal shadows may not be (2**53 + 1 and
        # 2**53 share one), so the exact comparison decides those that are not exact.
        return case(
            (x.n != y.n, false()),
            (and_(shadow_is_value(x.v, x.n), shadow_is_value(y.v, y.n)), true()),
            else_=func.q_eq(encoding(x), encoding(y)) == 1,
        )
    return func.q_eq(encoding(x), encoding(y)) == 1


def _relational(ctx: Context, rel: Rel, e: Any) -> ColumnElement[bool] | Node:
    op = e.op
    if op is None:
        return _expr(ctx, rel, e.expr)
    op = str(op)
    if op in ("IN", "NOT IN"):
        others = list(e.other)
        if not others:
            return false() if op == "IN" else true()
        hit = balanced(or_, [_equal(ctx, rel, e.expr, o) for o in others])
        return hit if op == "IN" else not_(hit)
    if op == "=":
        return _equal(ctx, rel, e.expr, e.other)
    if op == "!=":
        return not_(_equal(ctx, rel, e.expr, e.other))
    x, y = value_of(ctx, rel, e.expr), value_of(ctx, rel, e.other)
    if not x.has_v or not y.has_v:
        return literal(None)  # IRIs do not order under < (a type error)
    cmp = func.q_cmp(encoding(x), encoding(y))
    exact = {"<": cmp < 0, ">": cmp > 0, "<=": cmp <= 0, ">=": cmp >= 0}[op]
    if x.n is not None and y.n is not None:
        # The shadows order two numbers wherever they differ (rounding to a double keeps order);
        # equal shadows (2**53 + 1 and 2**53) leave it to the exact comparison.
        sql = {"<": x.n < y.n, ">": x.n > y.n, "<=": x.n < y.n, ">=": x.n > y.n}[op]
        same = (and_(shadow_is_value(x.v, x.n), shadow_is_value(y.v, y.n)), true() if "=" in op else false())
        if _is_number_constant(e.other) or _is_number_constant(e.expr):
            # a number against a number constant: NULL when ?x is no number
            return case((x.n != y.n, sql), same, (x.n == y.n, exact))
        return case((x.n != y.n, sql), same, else_=exact)
    return exact


def _is_number_constant(term: Any) -> bool:
    return isinstance(term, Literal) and values.numeric(_lit_enc(term) or b"\x01") is not None


def _lit_enc(term: Literal) -> bytes | None:
    try:
        return values.literal(str(term), str(term.datatype) if term.datatype else None, term.language)
    except BadLiteral:
        return None


def _arith(ctx: Context, rel: Rel, e: Any) -> Node:
    ops = e.op or []
    if isinstance(ops, str):
        ops = [ops]
    others = e.other or []
    if not isinstance(others, list):
        others = [others]
    acc = value_of(ctx, rel, e.expr)
    if not ops:
        return acc
    for op, other in zip(ops, others, strict=True):
        y = value_of(ctx, rel, other)
        if not acc.has_v or not y.has_v:
            return Node(null(), null(), has_id=False)
        v = func.q_arith(str(op), encoding(acc), encoding(y))
        acc = Node(null(), v, has_id=False)
    return acc


def _unary_minus(ctx: Context, rel: Rel, e: Any) -> Node:
    x = value_of(ctx, rel, e.expr)
    return Node(null(), func.q_neg(encoding(x)) if x.has_v else null(), has_id=False)


def _unary_plus(ctx: Context, rel: Rel, e: Any) -> Node:
    x = value_of(ctx, rel, e.expr)
    return Node(
        null(), func.q_arith("+", encoding(x), values.integer(0)) if x.has_v else null(), has_id=False
    )


def _bound_fn(ctx: Context, rel: Rel, e: Any) -> ColumnElement[bool]:
    x = _expr(ctx, rel, e.arg)
    if not isinstance(x, Node):
        return true()
    if not x.has_id and not x.has_v:
        return false()
    return is_bound(x)


def _is_iri(ctx: Context, rel: Rel, e: Any) -> ColumnElement[bool]:
    x = value_of(ctx, rel, e.arg)
    if not x.has_id:
        return case((x.v.is_not(None), false()))
    blank = func.substr(iri_text(ctx, x.id), 1, 2) == "_:"
    return case((x.id.is_not(None), not_(blank)), (x.v.is_not(None) if x.has_v else false(), false()))


def _is_blank(ctx: Context, rel: Rel, e: Any) -> ColumnElement[bool]:
    x = value_of(ctx, rel, e.arg)
    if not x.has_id:
        return case((x.v.is_not(None), false()))
    blank = func.substr(iri_text(ctx, x.id), 1, 2) == "_:"
    return case((x.id.is_not(None), blank), (x.v.is_not(None) if x.has_v else false(), false()))


def _is_literal(ctx: Context, rel: Rel, e: Any) -> ColumnElement[bool]:
    x = value_of(ctx, rel, e.arg)
    if not x.has_v:
        return case((x.id.is_not(None), false()))
    if not x.has_id:
        return case((x.v.is_not(None), true()))
    return case((x.id.is_not(None), false()), (x.v.is_not(None), true()))


def _is_numeric(ctx: Context, rel: Rel, e: Any) -> ColumnElement[bool]:
    x = value_of(ctx, rel, e.arg)
    if not x.has_v:
        return case((x.id.is_not(None), false()))
    return func.q_isnumeric(encoding(x)) == 1


def _same_term_fn(ctx: Context, rel: Rel, e: Any) -> ColumnElement[bool]:
    x, y = value_of(ctx, rel, e.arg1), value_of(ctx, rel, e.arg2)
    if never_bound(x) or never_bound(y):
        return UNKNOWN
    if not x.has_v or not y.has_v:
        return case((and_(is_bound(x), is_bound(y)), func.coalesce(eq(x.id, y.id), false())))
    return case((and_(is_bound(x), is_bound(y)), eq(encoding(x), encoding(y))))


def _str(ctx: Context, rel: Rel, e: Any) -> Node:
    x = value_of(ctx, rel, e.arg)
    lit = func.q_simple(func.q_lex(x.v)) if x.has_v else null()
    if not x.has_id:
        return Node(null(), lit, has_id=False)
    return Node(
        null(), case((x.id.is_not(None), func.q_iristr(iri_text(ctx, x.id))), else_=lit), has_id=False
    )


def _lang(ctx: Context, rel: Rel, e: Any) -> Node:
    x = value_of(ctx, rel, e.arg)
    return Node(null(), func.q_simple(func.q_lang(encoding(x))) if x.has_v else null(), has_id=False)


def _str1(fn: str) -> Callable[[Context, Rel, Any], Node]:
    def handler(ctx: Context, rel: Rel, e: Any) -> Node:
        x = value_of(ctx, rel, e.arg)
        return Node(null(), func.q_strfn1(fn, encoding(x)) if x.has_v else null(), has_id=False)

    return handler


def _str2_bool(fn: str) -> Callable[[Context, Rel, Any], ColumnElement[bool]]:
    def handler(ctx: Context, rel: Rel, e: Any) -> ColumnElement[bool]:
        x, y = value_of(ctx, rel, e.arg1), value_of(ctx, rel, e.arg2)
        if not x.has_v or not y.has_v:
            return literal(None)
        general = func.q_strtest(fn, encoding(x), encoding(y)) == 1
        needle = e.arg2
        if not (
            isinstance(needle, Literal)
            and needle.language is None
            and needle.datatype in (None, XSD_STRING_REF)
        ):
            return general
        # A simple-string constant against a stored simple string: plain SQL on the bytes
        # after the tag, no Python per row (other values keep the full SPARQL rules).
        text = utf8_text(func.substr(x.v, 2))
        n = len(str(needle))
        fast = {
            "CONTAINS": text_position(text, literal(str(needle), Text)) > 0,
            "STRSTARTS": func.substr(text, 1, n) == str(needle),
            "STRENDS": text_suffix(text, n) == str(needle) if n else true(),
        }[fn]
        return case((func.substr(x.v, 1, 1) == values.string(""), fast), else_=general)

    return handler


def _str2_node(fn: str) -> Callable[[Context, Rel, Any], Node]:
    def handler(ctx: Context, rel: Rel, e: Any) -> Node:
        x, y = value_of(ctx, rel, e.arg1), value_of(ctx, rel, e.arg2)
        if not x.has_v or not y.has_v:
            return Node(null(), null(), has_id=False)
        return Node(null(), func.q_strpart(fn, encoding(x), encoding(y)), has_id=False)

    return handler


def _simple_text(term: Any) -> str | None:
    """A constant simple (or xsd:string) literal's text, the only pattern kind REGEX accepts."""
    if isinstance(term, Literal) and term.language is None and term.datatype in (None, XSD_STRING_REF):
        return str(term)
    return None


def _constant_texts(*terms: Any) -> list[str | None] | None:
    """The texts of constant simple-literal arguments (None for an absent one), or None when one
    given is not such a constant."""
    texts = [None if t is None else _simple_text(t) for t in terms]
    if any(t is not None and x is None for t, x in zip(terms, texts, strict=True)):
        return None
    return texts


def _regex(ctx: Context, rel: Rel, e: Any) -> ColumnElement[bool]:
    x, p = value_of(ctx, rel, e.text), value_of(ctx, rel, e.pattern)
    if not x.has_v or not p.has_v:
        return literal(None)
    constants = _constant_texts(e.pattern, e.flags)
    if constants is not None and constants[0] is not None:
        own = ctx.db.dialect.regex(encoding(x), constants[0], constants[1])
        if own is not None:
            return own == 1
    flags = e.flags
    if flags is None:
        return func.q_regex2(encoding(x), encoding(p)) == 1
    f = value_of(ctx, rel, flags)
    return func.q_regex3(encoding(x), encoding(p), encoding(f)) == 1


def _if(ctx: Context, rel: Rel, e: Any) -> Node:
    c = _bool(ctx, rel, e.arg1)
    a, b = value_of(ctx, rel, e.arg2), value_of(ctx, rel, e.arg3)
    return Node(
        case((c, _typed(a.id, BigInteger)), (not_(c), b.id)) if (a.has_id or b.has_id) else null(),
        case((c, _typed(a.v, LargeBinary)), (not_(c), b.v)) if (a.has_v or b.has_v) else null(),
        has_id=a.has_id or b.has_id,
        has_v=a.has_v or b.has_v,
        v_full=(a.v_full or not a.has_id) and (b.v_full or not b.has_id),
    )


def _typed(col: Col, type_: type[BigInteger] | type[LargeBinary]) -> Col:
    """A NULL branch of a CASE, typed: PostgreSQL types a CASE whose branches are all NULL as
    text, and then has no function of it (``COALESCE(?unbound * 2)``)."""
    return cast(col, type_) if isinstance(col, Null) else col


def _coalesce(ctx: Context, rel: Rel, e: Any) -> Node:
    args = [value_of(ctx, rel, a) for a in _arg_list(e.arg)]
    if not args:
        return Node(null(), null(), has_id=False)
    whens_id = [(is_bound(a), _typed(a.id, BigInteger)) for a in args]
    whens_v = [(is_bound(a), _typed(a.v, LargeBinary)) for a in args]
    return Node(
        case(*whens_id) if any(a.has_id for a in args) else null(),
        case(*whens_v) if any(a.has_v for a in args) else null(),
        has_id=any(a.has_id for a in args),
        has_v=any(a.has_v for a in args),
        v_full=all(a.v_full or not a.has_id for a in args),
    )


def _exists(negated: bool) -> Callable[[Context, Rel, Any], ColumnElement[bool]]:
    def handler(ctx: Context, rel: Rel, e: Any) -> ColumnElement[bool]:
        ctx.outer.append(rel)
        try:
            inner = ctx.pattern(ctx, e.graph)
        finally:
            ctx.outer.pop()
        if inner.empty:
            return true() if negated else false()
        conds = list(inner.conds)
        for name, y in inner.vars.items():
            x = rel.vars.get(name)
            if x is None:
                continue
            # Compatible solutions: equal where both are bound; an unbound side (outer OPTIONAL,
            # inner VALUES ... UNDEF) matches anything.
            either = [is_unbound(x)] if name in rel.maybe else []
            either += [same_term(x, y)]
            either += [is_unbound(y)] if name in inner.maybe else []
            conds.append(or_(*either) if len(either) > 1 else either[0])
        sub = select(literal(1))
        # Everything not the inner pattern's own is the outer row's: correlate it explicitly
        # (SQLAlchemy would not correlate away a subquery's only FROM).
        if inner.froms:
            sub = sub.select_from(*inner.froms).correlate_except(*inner.froms)
        else:
            sub = sub.correlate_except(None)
        found = exists(sub.where(*conds)) if conds else exists(sub)
        return not_(found) if negated else found

    return handler


def _literal_fn(fn: str, *params: str) -> Callable[[Context, Rel, Any], Node]:
    """A function of literal arguments computed by ``sqlfunctions`` (NULL on a type error)."""

    def handler(ctx: Context, rel: Rel, e: Any) -> Node:
        args: list[Col] = []
        for param in params:
            term = getattr(e, param)
            if term is None:
                continue
            x = value_of(ctx, rel, term)
            if isinstance(term, URIRef):  # an IRI argument (STRDT's datatype) goes in as text
                args.append(literal(values.string(str(term))))
            elif not x.has_v:
                return Node(null(), null(), has_id=False)
            else:
                args.append(encoding(x))
        name = fn if fn not in ("q_replace",) else f"{fn}{len(args)}"
        return Node(null(), getattr(func, name)(*args), has_id=False)

    return handler


_generic_replace = _literal_fn("q_replace", "arg", "pattern", "replacement", "flags")


def _replace(ctx: Context, rel: Rel, e: Any) -> Node:
    constants = _constant_texts(e.pattern, e.replacement, e.flags)
    if constants is not None and constants[0] is not None and constants[1] is not None:
        x = value_of(ctx, rel, e.arg)
        if not x.has_v:
            return Node(null(), null(), has_id=False)
        own = ctx.db.dialect.replace(encoding(x), constants[0], constants[2], constants[1])
        if own is not None:
            return Node(null(), own, has_id=False)
    return _generic_replace(ctx, rel, e)


def _arg_list(arg: Any) -> list[Any]:
    """A variadic function's arguments (the parser leaves a bare token for an empty list)."""
    if isinstance(arg, list):
        return arg
    return [] if arg is None or arg == URIRef(values.RDF + "nil") else [arg]


def _concat(ctx: Context, rel: Rel, e: Any) -> Node:
    args = [value_of(ctx, rel, a) for a in _arg_list(e.arg)]
    if any(not x.has_v for x in args):
        return Node(null(), null(), has_id=False)
    # CONCAT is associative, language tags included (one tag survives only if every part has
    # it), so a long argument list is concatenated in pieces the database accepts.
    parts = [encoding(x) for x in args]
    while len(parts) > MAX_FUNCTION_ARGS:
        parts = [
            func.q_concat(*parts[i : i + MAX_FUNCTION_ARGS]) for i in range(0, len(parts), MAX_FUNCTION_ARGS)
        ]
    return Node(null(), func.q_concat(*parts), has_id=False)


def _timezone(as_duration: int) -> Callable[[Context, Rel, Any], Node]:
    def handler(ctx: Context, rel: Rel, e: Any) -> Node:
        x = value_of(ctx, rel, e.arg)
        return Node(null(), func.q_timezone(encoding(x), as_duration) if x.has_v else null(), has_id=False)

    return handler


_HANDLERS: dict[str, Callable[[Context, Rel, Any], Any]] = {
    "ConditionalAndExpression": _and,
    "ConditionalOrExpression": _or,
    "UnaryNot": _not,
    "RelationalExpression": _relational,
    "AdditiveExpression": _arith,
    "MultiplicativeExpression": _arith,
    "UnaryMinus": _unary_minus,
    "UnaryPlus": _unary_plus,
    "Builtin_BOUND": _bound_fn,
    "Builtin_isIRI": _is_iri,
    "Builtin_isURI": _is_iri,
    "Builtin_isBLANK": _is_blank,
    "Builtin_isLITERAL": _is_literal,
    "Builtin_isNUMERIC": _is_numeric,
    "Builtin_sameTerm": _same_term_fn,
    "Builtin_STR": _str,
    "Builtin_LANG": _lang,
    "Builtin_STRLEN": _str1("STRLEN"),
    "Builtin_UCASE": _str1("UCASE"),
    "Builtin_LCASE": _str1("LCASE"),
    "Builtin_CONTAINS": _str2_bool("CONTAINS"),
    "Builtin_STRSTARTS": _str2_bool("STRSTARTS"),
    "Builtin_STRENDS": _str2_bool("STRENDS"),
    "Builtin_STRBEFORE": _str2_node("STRBEFORE"),
    "Builtin_STRAFTER": _str2_node("STRAFTER"),
    "Builtin_REGEX": _regex,
    "Builtin_IF": _if,
    "Builtin_COALESCE": _coalesce,
    "Builtin_CONCAT": _concat,
    "Builtin_STRDT": _literal_fn("q_strdt", "arg1", "arg2"),
    "Builtin_STRLANG": _literal_fn("q_strlang", "arg1", "arg2"),
    "Builtin_REPLACE": _replace,
    "Builtin_TIMEZONE": _timezone(1),
    "Builtin_TZ": _timezone(0),
    "Builtin_EXISTS": _exists(False),
    "Builtin_NOTEXISTS": _exists(True),
}
