/*  quipu_graph: the knowledge graph as Prolog predicates, read from quipu's store.

    rdf(S, P, O)            S P O holds in ROOT now
    rdf(S, P, O, G)         ... in graph G (ROOT's IRI for ROOT); G unbound: any graph
    rdf_at(S, P, O, At)     ... in ROOT as true at valid time At (an RFC 3339 instant)
    rdf_tx(S, P, O, Tx)     ... in ROOT as the store knew it after transaction Tx; Tx
                            unbound: the transaction that asserted each current fact

    Terms (docs/logic.md): an IRI is the atom of its full text; a literal is literal(Lex),
    literal(lang(Lang, Lex)) or literal(type(Datatype, Lex)), with atoms, as in SWI-Prolog's
    semweb rdf_db. A bound argument of any other shape matches nothing. In an IRI position (or
    as a datatype) a CURIE Prefix:Local is expanded through the store's prefixes, as semweb
    rdf11 does; query_logic writes IRIs in its answers as CURIEs the same way.

    Every call sends its bound arguments to quipu's graph bridge (quipu/logic/graph_bridge.py)
    over a Unix socket, as one JSON line; the bridge answers with one page of rows from one SQL
    statement, and the next page is asked for only when backtracking reaches it. Nothing here
    can write to the graph. A refusal or a missing store throws quipu_graph_error(Message),
    which the query helper reports as such instead of failing silently.

    The call cache. A join such as rdf(S, a, T), rdf(S, owner, O) calls its inner pattern
    once per outer solution. A lookup (the predicate bound, and the subject or the object
    bound) counts towards its call pattern: the predicate, graph scope and read point. At the
    qg_lookups_before_load-th lookup of one pattern in a tool call, the bridge counts the
    pattern's rows (one statement); once the lookups made would have cost about what reading
    the pattern costs (qg_rows_per_lookup rows per lookup), the whole pattern is read in one
    SQL statement and kept as qg_row/5 clauses, which answer every later lookup of it through
    SWI-Prolog's just-in-time argument indexes. So a join costs a few statements per call
    pattern, not one per solution, while a rule that looks up a handful of subjects of a huge
    pattern never loads it. The cache is bounded (qg_cache_rows rows per tool call; a pattern
    that does not fit is read per call) and forgotten before every call quipu makes into the
    engine (qg_new_call), so no answer outlives the graph it was read from.
*/
:- module(quipu_graph, [rdf/3, rdf/4, rdf_at/4, rdf_tx/4]).

:- use_module(library(socket)).
:- use_module(library(http/json)).
:- use_module(library(error)).

:- dynamic qg_endpoint/1.          % the bridge's socket path
:- dynamic qg_connection/2.        % qg_connection(In, Out): the open connection
:- dynamic qg_row/5.               % qg_row(Key, S, O, G, Tx): a loaded call pattern's rows
:- dynamic qg_key/2.               % qg_key(Key, State): lookups(N), loaded or per_call
:- dynamic qg_held/1.              % qg_held(N): rows the cache holds in this tool call
:- dynamic qg_prefix/2.            % qg_prefix(Prefix, Namespace): the store's, this tool call
:- dynamic qg_prefixes_read/0.

:- dynamic qg_lookups_before_load/1, qg_rows_per_lookup/1, qg_cache_rows/1.  % tests set them
qg_lookups_before_load(8).          % lookups of one pattern before its size is asked
qg_rows_per_lookup(250).            % a lookup is worth loading this many rows (see qg_consider)
qg_cache_rows(100000).              % at most this many cached rows per tool call

%   qg_new_call: forget the cache (run before every call quipu makes into the engine).
qg_new_call :-
    (   qg_key(_, _)
    ->  retractall(qg_row(_, _, _, _, _)),
        retractall(qg_key(_, _)),
        retractall(qg_held(_))
    ;   true
    ),
    (   qg_prefixes_read
    ->  retractall(qg_prefix(_, _)),
        retractall(qg_prefixes_read)
    ;   true
    ).

%   qg_set_endpoint(+Path): where the bridge listens (set by quipu at start and restart).
qg_set_endpoint(Path) :-
    qg_disconnect,
    retractall(qg_endpoint(_)),
    atom_string(A, Path),
    assertz(qg_endpoint(A)).

rdf(S0, P0, O0) :-
    qg_terms(S0, P0, O0, S, P, O),
    qg_match(S, P, O, null, now, _, _).

rdf(S0, P0, O0, G0) :-
    qg_terms(S0, P0, O0, S, P, O),
    qg_iri(G0, G),
    (   var(G)
    ->  Scope = "*"
    ;   atom(G)
    ->  atom_string(G, Scope)
    ;   fail
    ),
    qg_match(S, P, O, Scope, now, G, _).

rdf_at(S0, P0, O0, At) :-
    must_be(nonvar, At),
    (   text_to_string(At, Text)
    ->  true
    ;   type_error(instant, At)
    ),
    qg_terms(S0, P0, O0, S, P, O),
    qg_match(S, P, O, null, valid_at(Text), _, _).

rdf_tx(S0, P0, O0, Tx) :-
    qg_terms(S0, P0, O0, S, P, O),
    (   var(Tx)
    ->  qg_match(S, P, O, null, now, _, Tx)
    ;   must_be(nonneg, Tx),
        qg_match(S, P, O, null, as_of_tx(Tx), _, _)
    ).

%   qg_terms(+S0, +P0, +O0, -S, -P, -O): the arguments with each Prefix:Local CURIE (an IRI
%   position, or a literal's datatype) expanded through the store's prefixes, as semweb/rdf11
%   reads them: rdf(S, rdf:type, ex:'Service').
qg_terms(S0, P0, O0, S, P, O) :-
    qg_iri(S0, S),
    qg_iri(P0, P),
    qg_object_term(O0, O).

qg_iri(X, X) :- var(X), !.
qg_iri(Prefix:Local, IRI) :- !, qg_expand(Prefix, Local, IRI).
qg_iri(X, X).

qg_object_term(X, X) :- var(X), !.
qg_object_term(literal(L), Literal) :- !,
    (   nonvar(L),
        L = type(T0, Lex)
    ->  qg_iri(T0, T),
        Literal = literal(type(T, Lex))
    ;   Literal = literal(L)            % an unbound L must stay unbound: no shape is chosen here
    ).
qg_object_term(X, Y) :- qg_iri(X, Y).

qg_expand(Prefix, Local, IRI) :-
    (   atom(Prefix), atomic(Local)
    ->  true
    ;   qg_fail("a CURIE is Prefix:Local, both atoms (ex:checkout, ex:'Service')")
    ),
    qg_prefixes,
    (   qg_prefix(Prefix, Namespace)
    ->  atom_concat(Namespace, Local, IRI)
    ;   findall(P, qg_prefix(P, _), Known),
        atomic_list_concat(Known, ', ', KnownText),
        format(string(Message),
               "unknown prefix ~q: the store's prefixes are those its loaded shape sets declare (~w)",
               [Prefix, KnownText]),
        qg_fail(Message)
    ).

%   qg_prefixes: the store's prefix map, read once per tool call.
qg_prefixes :-
    qg_prefixes_read, !.
qg_prefixes :-
    qg_ask(_{prefixes: true}, Reply),
    (   Reply = x(Pairs)
    ->  forall(member(P-NS, Pairs), assertz(qg_prefix(P, NS))),
        assertz(qg_prefixes_read)
    ;   qg_fail("the graph bridge sent an unexpected reply")
    ).

%   qg_proof_tx(+Goal, -Tx): for a proven graph goal, the transaction of the fact it used
%   (at the goal's own read point): explain_why's leaves carry it.
qg_proof_tx(rdf(S0, P0, O0), Tx) :-
    qg_terms(S0, P0, O0, S, P, O),
    once(qg_match(S, P, O, null, now, _, Tx)).
qg_proof_tx(rdf(S0, P0, O0, G0), Tx) :-
    qg_terms(S0, P0, O0, S, P, O),
    qg_iri(G0, G),
    atom_string(G, Scope),
    once(qg_match(S, P, O, Scope, now, G, Tx)).
qg_proof_tx(rdf_at(S0, P0, O0, At), Tx) :-
    qg_terms(S0, P0, O0, S, P, O),
    text_to_string(At, Text),
    once(qg_match(S, P, O, null, valid_at(Text), _, Tx)).
qg_proof_tx(rdf_tx(S0, P0, O0, AsOf), Tx) :-
    qg_terms(S0, P0, O0, S, P, O),
    once(qg_match(S, P, O, null, as_of_tx(AsOf), _, Tx)).

%   qg_match(?S, ?P, ?O, +Scope, +Point, ?G, ?Tx): the rows of one pattern, page by page, or
%   from the call cache. Point: now, valid_at(Text) or as_of_tx(N).
qg_match(S, P, O, Scope, Point, G, Tx) :-
    qg_iri_arg(S, SJ),
    qg_iri_arg(P, PJ),
    qg_object_arg(O, OJ),
    (   qg_lookup(S, P, O),
        Key = k(P, Scope, Point),
        qg_cached(Key)
    ->  qg_row(Key, S, O, G, Tx)
    ;   qg_point(Point, PointJ),
        Request = _{s: SJ, p: PJ, o: OJ, graph: Scope, point: PointJ},
        qg_rows(Request, 0, r(S, P, O, G, Tx))
    ).

qg_point(now, null).
qg_point(valid_at(Text), _{valid_at: Text}).
qg_point(as_of_tx(Tx), _{as_of_tx: Tx}).

%   qg_lookup(+S, +P, +O): a call the cache may answer: the predicate bound, and the subject or
%   the object. A cached row answers exactly as a fetched one: the store matches a bound object
%   and the row it returns must then unify with it, which is the cache's test.
qg_lookup(S, P, O) :-
    atom(P),
    (   atom(S)
    ->  true
    ;   nonvar(O)
    ).

%   qg_cached(+Key): Key's rows are in the cache, loaded now if this lookup is the one that
%   makes loading worth it. Fails when the pattern is read per call (for now, or for good).
%   State: lookups(N) until the pattern's size is asked, sized(N, Size) after, then loaded or
%   per_call.
qg_cached(Key) :-
    (   qg_key(Key, State)
    ->  true
    ;   State = lookups(0)
    ),
    (   State == loaded
    ->  true
    ;   State == per_call
    ->  fail
    ;   retractall(qg_key(Key, _)),
        (   State = lookups(N)
        ->  N1 is N + 1,
            (   qg_lookups_before_load(Enough),
                N1 >= Enough
            ->  qg_size(Key, Size),
                qg_consider(Key, N1, Size)
            ;   assertz(qg_key(Key, lookups(N1))),
                fail
            )
        ;   State = sized(N, Size),
            N1 is N + 1,
            qg_consider(Key, N1, Size)
        )
    ).

%   qg_consider(+Key, +Lookups, +Size): load the pattern once the lookups made of it would have
%   cost about what reading it costs (qg_rows_per_lookup rows each), never past the room left.
%   A rule that looks up a few subjects of a big pattern keeps its per-call reads; one that
%   walks the pattern loads it after a small share of its lookups.
qg_consider(Key, N, Size) :-
    qg_room(Room),
    (   Size > Room
    ->  assertz(qg_key(Key, per_call)),
        fail
    ;   qg_rows_per_lookup(PerLookup),
        N * PerLookup >= Size
    ->  qg_load(Key, Room)
    ;   assertz(qg_key(Key, sized(N, Size))),
        fail
    ).

qg_room(Room) :-
    (   qg_held(Held)
    ->  true
    ;   Held = 0
    ),
    qg_cache_rows(Max),
    Room is max(0, Max - Held).

%   qg_size(+Key, -Size): the pattern's rows, counted by the bridge up to the room left + 1.
qg_size(Key, Size) :-
    Key = k(P, Scope, Point),
    qg_room(Room),
    atom_string(P, PJ),
    qg_point(Point, PointJ),
    qg_ask(_{s: null, p: PJ, o: null, graph: Scope, point: PointJ, count: Room}, Reply),
    (   Reply = n(Size)
    ->  true
    ;   qg_fail("the graph bridge sent an unexpected reply")
    ).

%   qg_load(+Key, +Room): read the whole pattern into qg_row/5; succeeds when it fitted in
%   Room (the graph may have grown since it was counted). One that did not is marked per_call.
qg_load(Key, Room) :-
    Key = k(P, Scope, Point),
    atom_string(P, PJ),
    qg_point(Point, PointJ),
    Request = _{s: null, p: PJ, o: null, graph: Scope, point: PointJ, bulk: Room},
    catch(qg_bulk(Request, Key, Truncated), E,
          ( retractall(qg_row(Key, _, _, _, _)), throw(E) )),
    (   Truncated == true
    ->  retractall(qg_row(Key, _, _, _, _)),
        assertz(qg_key(Key, per_call)),
        fail
    ;   aggregate_all(count, qg_row(Key, _, _, _, _), Count),
        (   retract(qg_held(Held))
        ->  true
        ;   Held = 0
        ),
        Held1 is Held + Count,
        assertz(qg_held(Held1)),
        assertz(qg_key(Key, loaded))
    ).

%   qg_bulk(+Request, +Key, -Truncated): one bulk request; its reply lines are stored as they
%   arrive (qg_io/2: a retry first drops what a broken attempt stored).
qg_bulk(Request, Key, Truncated) :-
    qg_io(qg_bulk_once(Request, Key, Truncated), retractall(qg_row(Key, _, _, _, _))).

qg_bulk_once(Request, Key, Truncated) :-
    qg_connected(In, Out),
    qg_send(Out, Request),
    qg_bulk_lines(In, Key, Truncated).

qg_bulk_lines(In, Key, Truncated) :-
    qg_reply(In, Reply),
    (   Reply = b(Rows, State)
    ->  true
    ;   qg_fail("the graph bridge sent an unexpected reply")
    ),
    forall(member(r(S, _, O, G, Tx), Rows), assertz(qg_row(Key, S, O, G, Tx))),
    (   State == more
    ->  qg_bulk_lines(In, Key, Truncated)
    ;   State == truncated
    ->  Truncated = true
    ;   Truncated = false
    ).

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

%   qg_rows(+Request, +After, -Row): the rows from cursor After on; the next page is fetched
%   only when backtracking has used this one up. Pages grow from 500 rows to 5000 (the
%   bridge's largest), so a long walk costs few statements and a short one reads little.
qg_rows(Request, After, Row) :-
    qg_rows(Request, After, 500, Row).

qg_rows(Request, After, Size, Row) :-
    put_dict(_{after: After, size: Size}, Request, Asked),
    qg_ask(Asked, Reply),
    (   Reply = p(Rows, Next)
    ->  true
    ;   qg_fail("the graph bridge sent an unexpected reply")
    ),
    (   member(Row, Rows)
    ;   Next \== none,
        Larger is min(Size * 2, 5000),
        qg_rows(Request, Next, Larger, Row)
    ).

%   qg_ask(+Request, -Reply): one round trip.
qg_ask(Request, Reply) :-
    qg_io(qg_exchange(Request, Reply), true).

%   qg_io(:Goal, :Undo): one exchange with the bridge. The connection is opened on first use;
%   if the bridge dropped it (say after an engine restart), it is reopened, Undo run and Goal
%   tried once more. Whatever else stops an exchange leaves the connection closed (a reply may
%   be half read) and is passed on: a time limit as such, anything unexpected as a graph
%   error, so that a failed read is never taken for no solutions.
qg_io(Goal, Undo) :-
    catch(Goal, E, ( qg_disconnect, qg_io_retry(E, Goal, Undo) )),
    !.
qg_io(_, _) :-
    qg_disconnect,
    qg_fail("the graph bridge gave no answer").

qg_io_retry(E, Goal, Undo) :-
    (   qg_retryable(E)
    ->  call(Undo),
        catch(Goal, E2, ( qg_disconnect, qg_io_failed(E2) ))
    ;   qg_io_failed(E)
    ).

qg_io_failed(E) :-
    (   qg_passed_on(E)
    ->  throw(E)
    ;   format(string(Message), "the graph bridge could not be read: ~q", [E]),
        qg_fail(Message)
    ).

qg_passed_on(quipu_graph_error(_)).
qg_passed_on(time_limit_exceeded).
qg_passed_on(resource_error(_)).
qg_passed_on(error(resource_error(_), _)).
qg_passed_on('$aborted').

%   qg_retryable(+E): the connection broke.
qg_retryable(error(io_error(_, _), _)).
qg_retryable(error(socket_error(_, _), _)).
qg_retryable(error(existence_error(stream, _), _)).

qg_exchange(Request, Reply) :-
    qg_connected(In, Out),
    qg_send(Out, Request),
    qg_reply(In, Reply).

qg_send(Out, Request) :-
    json_write_dict(Out, Request, [width(0)]),
    nl(Out),
    flush_output(Out).

%   qg_reply(+In, -Reply): the next reply, a term on a line of its own:
%       p(Rows, Next)       a page; Next is the next page's cursor or none
%       b(Rows, State)      a part of a whole-pattern read; State is more, done or truncated
%       e(Message)          a refusal (thrown here as quipu_graph_error(Message))
%   where each row is r(S, P, O, G, Tx) in the terms of this module. The bridge writes atoms
%   quoted and escaped, and read_term/3 only builds terms, so no text from the graph can be
%   read as code. The end of the stream before a reply means the bridge closed the connection;
%   a reply cut short is the query's time limit interrupting the read, raised as itself.
qg_reply(In, Reply) :-
    (   at_end_of_stream(In)
    ->  throw(error(io_error(read, In), context(qg_reply/2, 'the graph bridge closed the connection')))
    ;   catch(read_term(In, Reply0, [syntax_errors(error)]),
              error(syntax_error(_), _),
              throw(time_limit_exceeded))
    ),
    (   Reply0 = e(Message)
    ->  qg_fail(Message)
    ;   Reply = Reply0
    ).

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
