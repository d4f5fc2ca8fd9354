/*  quipu_graph: the knowledge graph as Prolog predicates, read from quipu's store.

    rdf(S, P, O)            S P O holds in ROOT now
    rdf(S, P, O, G)         ... in graph G (ROOT's IRI for ROOT); G unbound: any graph
    rdf_at(S, P, O, At)     ... in ROOT as true at valid time At (an RFC 3339 instant)
    rdf_tx(S, P, O, Tx)     ... in ROOT as the store knew it after transaction Tx; Tx
                            unbound: the transaction that asserted each current fact

    Terms (docs/logic.md): an IRI is the atom of its full text; a literal is literal(Lex),
    literal(lang(Lang, Lex)) or literal(type(Datatype, Lex)), with atoms, as in SWI-Prolog's
    semweb rdf_db. A bound argument of any other shape matches nothing.

    Every call sends its bound arguments to quipu's graph bridge (quipu/logic/graph_bridge.py)
    over a Unix socket, as one JSON line; the bridge answers with one page of rows from one SQL
    statement, and the next page is asked for only when backtracking reaches it. Nothing here
    can write to the graph. A refusal or a missing store throws quipu_graph_error(Message),
    which the query helper reports as such instead of failing silently.
*/
:- module(quipu_graph, [rdf/3, rdf/4, rdf_at/4, rdf_tx/4]).

:- use_module(library(socket)).
:- use_module(library(http/json)).
:- use_module(library(error)).

:- dynamic qg_endpoint/1.          % the bridge's socket path
:- dynamic qg_connection/2.        % qg_connection(In, Out): the open connection

%   qg_set_endpoint(+Path): where the bridge listens (set by quipu at start and restart).
qg_set_endpoint(Path) :-
    qg_disconnect,
    retractall(qg_endpoint(_)),
    atom_string(A, Path),
    assertz(qg_endpoint(A)).

rdf(S, P, O) :-
    qg_match(S, P, O, null, null, _, _).

rdf(S, P, O, G) :-
    (   var(G)
    ->  Scope = "*"
    ;   atom(G)
    ->  atom_string(G, Scope)
    ;   fail
    ),
    qg_match(S, P, O, Scope, null, G, _).

rdf_at(S, P, O, At) :-
    must_be(nonvar, At),
    (   text_to_string(At, Text)
    ->  true
    ;   type_error(instant, At)
    ),
    qg_match(S, P, O, null, _{valid_at: Text}, _, _).

rdf_tx(S, P, O, Tx) :-
    (   var(Tx)
    ->  qg_match(S, P, O, null, null, _, Tx)
    ;   must_be(nonneg, Tx),
        qg_match(S, P, O, null, _{as_of_tx: Tx}, _, _)
    ).

%   qg_proof_tx(+Goal, -Tx): for a proven graph goal, the transaction of the fact it used
%   (at the goal's own read point): explain_why's leaves carry it.
qg_proof_tx(rdf(S, P, O), Tx) :-
    once(qg_match(S, P, O, null, null, _, Tx)).
qg_proof_tx(rdf(S, P, O, G), Tx) :-
    atom_string(G, Scope),
    once(qg_match(S, P, O, Scope, null, G, Tx)).
qg_proof_tx(rdf_at(S, P, O, At), Tx) :-
    text_to_string(At, Text),
    once(qg_match(S, P, O, null, _{valid_at: Text}, _, Tx)).
qg_proof_tx(rdf_tx(S, P, O, AsOf), Tx) :-
    once(qg_match(S, P, O, null, _{as_of_tx: AsOf}, _, Tx)).

%   qg_match(?S, ?P, ?O, +Scope, +Point, ?G, ?Tx): the rows of one pattern, page by page.
qg_match(S, P, O, Scope, Point, G, Tx) :-
    qg_iri_arg(S, SJ),
    qg_iri_arg(P, PJ),
    qg_object_arg(O, OJ),
    Request = _{s: SJ, p: PJ, o: OJ, graph: Scope, point: Point},
    qg_rows(Request, 0, [S1, P1, O1, G1, Tx1]),
    atom_string(S, S1),
    atom_string(P, P1),
    qg_object(O1, O),
    atom_string(G, G1),
    Tx = Tx1.

%   A bound argument of a shape no stored term has fails the call (it matches nothing).
qg_iri_arg(X, null) :- var(X), !.
qg_iri_arg(X, S) :- atom(X), atom_string(X, S).

qg_object_arg(X, null) :- var(X), !.
qg_object_arg(X, ["iri", S]) :- atom(X), !, atom_string(X, S).
qg_object_arg(literal(L), J) :- !, qg_literal_arg(L, J).

qg_literal_arg(L, null) :- var(L), !.
qg_literal_arg(lang(Lang, Lex), J) :- !,
    (   atomic(Lang), atomic(Lex)
    ->  atom_string(Lang, LS), atom_string(Lex, XS), J = ["literal", XS, null, LS]
    ;   J = null                        % partly bound: fetched loosely, then unified
    ).
qg_literal_arg(type(T, Lex), J) :- !,
    (   atom(T), atomic(Lex)
    ->  atom_string(T, TS), atom_string(Lex, XS), J = ["literal", XS, TS, null]
    ;   J = null
    ).
qg_literal_arg(Lex, ["literal", XS, null, null]) :-
    atomic(Lex),
    atom_string(Lex, XS).

qg_object(["iri", S], O) :- !, atom_string(O, S).
qg_object(["literal", Lex, null, null], literal(L)) :- !, atom_string(L, Lex).
qg_object(["literal", Lex, null, Lang], literal(lang(L, X))) :- !,
    atom_string(L, Lang), atom_string(X, Lex).
qg_object(["literal", Lex, T, null], literal(type(TA, X))) :-
    atom_string(TA, T), atom_string(X, Lex).

%   qg_rows(+Request, +After, -Row): the rows from cursor After on; the next page is fetched
%   only when backtracking has used this one up.
qg_rows(Request, After, Row) :-
    put_dict(after, Request, After, Asked),
    qg_ask(Asked, Reply),
    get_dict(rows, Reply, Rows),
    get_dict(next, Reply, Next),
    (   member(Row, Rows)
    ;   Next \== null,
        qg_rows(Request, Next, Row)
    ).

%   qg_ask(+Request, -Reply): one round trip. The connection is opened on first use and
%   reopened once if the bridge dropped it.
qg_ask(Request, Reply) :-
    (   catch(qg_exchange(Request, Reply0), E, ( qg_disconnect, qg_retry(E, Request, Reply0) ))
    ->  true
    ;   qg_fail("the graph bridge gave no answer")
    ),
    (   get_dict(error, Reply0, Message)
    ->  qg_fail(Message)
    ;   Reply = Reply0
    ).

qg_retry(E, Request, Reply) :-
    (   E = quipu_graph_error(_)
    ->  throw(E)
    ;   qg_exchange(Request, Reply)
    ).

qg_exchange(Request, Reply) :-
    qg_connected(In, Out),
    json_write_dict(Out, Request, [width(0)]),
    nl(Out),
    flush_output(Out),
    json_read_dict(In, Reply, [null(null), value_string_as(string)]).

qg_connected(In, Out) :-
    qg_connection(In, Out), !.
qg_connected(In, Out) :-
    (   qg_endpoint(Path)
    ->  true
    ;   qg_fail("the logic memory has no graph bridge")
    ),
    unix_domain_socket(Socket),
    catch(tcp_connect(Socket, Path), _, ( tcp_close_socket(Socket),
                                           qg_fail("cannot reach quipu's graph bridge") )),
    tcp_open_socket(Socket, In, Out),
    set_stream(In, encoding(utf8)),
    set_stream(Out, encoding(utf8)),
    assertz(qg_connection(In, Out)).

qg_disconnect :-
    forall(retract(qg_connection(In, Out)),
           ( catch(close(Out, [force(true)]), _, true),
             catch(close(In, [force(true)]), _, true) )).

qg_fail(Message) :-
    text_to_string(Message, S),
    throw(quipu_graph_error(S)).
