/*  quipu_runtime: engine-side helpers of the logic memory's runtime (quipu/logic/runtime.py).

    Loaded after quipu_logic and quipu_knowledge (Engine.load_helper). Two bulk loaders, each
    one engine call, so that a restart with a large snapshot and journal stays fast (§8.2):

    * qr_load_snapshot/4 reads a snapshot file in the engine (a stream, not 100k strings over
      the socket). Each ':- dynamic' line drops the predicate's clauses first, so a snapshot
      replaces what seed files defined for the predicates it declares (§8.2 step 2); in
      restore mode the whole memory is cleared first (R-RS2). The snapshot's own zpm_source
      records are not loaded: every fact it holds gets the source record 'snapshot' (R-TM9).
    * qr_replay/3 applies a list of journal entries in order (R-W2); an asserted fact gets the
      source record 'journal' (R-TM9).

    Clauses are stored through quipu_logic:ql_store/3, so author variable names (R-P5) and the
    rule index of the goal check (R-Q4) are kept exactly as for tool calls.
*/
:- module(quipu_runtime, []).

:- use_module(library(lists)).


qr_record_predicate(tms_justification, 2).
qr_record_predicate(zpm_source, 2).


                 /*******************************
                 *           SNAPSHOTS          *
                 *******************************/

%   qr_load_snapshot(+M, +Path, +Mode, -Result): Mode is startup or restore. Result:
%   ok(Loaded, Failures): Loaded counts the clauses and directives stored (not the skipped
%   source records), Failures = [f(Line, Message), ...]; error(Kind, Message) when the file
%   cannot be read.
qr_load_snapshot(M, Path, Mode, Result) :-
    catch(qr_load_snapshot_(M, Path, Mode, Result), E, qr_file_error(E, Result)).

qr_file_error(E, Result) :-
    quipu_logic:ql_guard_error(E, Result).

qr_load_snapshot_(M, Path, Mode, ok(Loaded, Failures)) :-
    (   Mode == restore
    ->  quipu_logic:ql_clear_module(M)
    ;   true
    ),
    setup_call_cleanup(
        open(Path, read, S, [encoding(utf8)]),
        qr_read_all(S, M, none, 0, Loaded, Failures, 0, [], Facts),
        close(S)),
    qr_first_variants(Facts, Unique),
    forall(member(k(_, _, F, Names), Unique),
           qr_store_fact(M, zpm_source(F, snapshot), Names)).

%   qr_read_all(+S, +M, +Last, +L0, -L, -Failures, +I, +Facts0, -Facts): Last is the
%   predicate of the previous fact, already checked by ql_store/3: the snapshot groups clauses
%   by predicate, so most facts skip the head check.
qr_read_all(S, M, Last, L0, L, Failures, I, Facts0, Facts) :-
    Options = [variable_names(Names), module(M), syntax_errors(error), term_position(Pos)],
    catch(read_term(S, T, Options), E, true),
    (   nonvar(E)
    ->  qr_error_line(E, S, Line),
        quipu_logic:ql_error_text(E, Msg),
        Failures = [f(Line, Msg)|Failures1],
        qr_read_all(S, M, Last, L0, L, Failures1, I, Facts0, Facts)
    ;   T == end_of_file
    ->  L = L0, Failures = [], Facts = Facts0
    ;   I1 is I + 1,
        catch(qr_snapshot_term(T, Names, M, I, Last, Last1, Facts0, Facts1), E2, true),
        (   var(E2)
        ->  (   nonvar(T), T = zpm_source(_, _)
            ->  L1 = L0                 % skipped: not counted as loaded
            ;   L1 is L0 + 1
            ),
            Failures = Failures1
        ;   L1 = L0,
            Last1 = Last,
            Facts1 = Facts0,
            stream_position_data(line_count, Pos, Line),
            quipu_logic:ql_error_text(E2, Msg2),
            Failures = [f(Line, Msg2)|Failures1]
        ),
        qr_read_all(S, M, Last1, L1, L, Failures1, I1, Facts1, Facts)
    ).

qr_error_line(error(_, stream(_, Line, _, _)), _, Line) :- !.
qr_error_line(_, S, Line) :-
    line_count(S, Line).

qr_snapshot_term(T, _, M, _, Last, Last, Facts, Facts) :-
    nonvar(T), T = (:- D), !,
    (   nonvar(D), D = dynamic(Spec)
    ->  qr_drop_declared(M, Spec)
    ;   true
    ),
    quipu_logic:ql_directive(M, D).
qr_snapshot_term(T, Names, M, I, Last0, Last, Facts0, Facts) :-
    (   nonvar(T), T = (H :- B)
    ->  true
    ;   H = T, B = true
    ),
    (   callable(H), functor(H, N, A), N/A == zpm_source/2
    ->  Last = Last0,                   % regenerated as 'snapshot' after loading
        Facts = Facts0
    ;   B == true, Names == [], callable(H), functor(H, N, A), N/A == Last0
    ->  assertz(M:H),                   % what ql_store/3 does for a checked fact
        Last = Last0,
        qr_fact_key(H, Key),
        Facts = [k(Key, I, H, Names)|Facts0]
    ;   quipu_logic:ql_store(M, T, Names),
        functor(H, N, A),
        (   B == true, \+ qr_record_predicate(N, A)
        ->  Last = N/A,
            qr_fact_key(H, Key),
            Facts = [k(Key, I, H, Names)|Facts0]
        ;   Last = Last0,
            Facts = Facts0
        )
    ).

qr_fact_key(H, Key) :-
    (   ground(H)
    ->  Key = g(H)
    ;   variant_sha1(H, Sha),
        Key = v(Sha)
    ).

%   qr_first_variants(+Facts, -Unique): one entry per fact up to variable renaming, the
%   first one, in load order (a fact has at most one source record, R-TM9).
qr_first_variants(Facts, Unique) :-
    msort(Facts, Sorted),               % by key, then by load order
    qr_first_of_keys(Sorted, none, Firsts),
    sort(2, @<, Firsts, Unique).

qr_first_of_keys([], _, []).
qr_first_of_keys([k(Key, I, F, N)|Rest], Prev, Out) :-
    (   Key == Prev
    ->  Out = Out1
    ;   Out = [k(Key, I, F, N)|Out1]
    ),
    qr_first_of_keys(Rest, Key, Out1).

qr_store_fact(M, Fact, Names) :-
    (   Names == []
    ->  assertz(M:Fact)
    ;   quipu_logic:ql_store(M, Fact, Names)
    ).

%   qr_drop_declared(+M, +Spec): a snapshot's predicate replaces the seed clauses (§8.2).
qr_drop_declared(_, Spec) :- var(Spec), !.
qr_drop_declared(M, (A, B)) :- !, qr_drop_declared(M, A), qr_drop_declared(M, B).
qr_drop_declared(M, List) :- is_list(List), !, forall(member(S, List), qr_drop_declared(M, S)).
qr_drop_declared(M, N/A) :- atom(N), integer(A), A >= 0, !,
    functor(H, N, A),
    quipu_logic:ql_erase_matching(M, H, _).
qr_drop_declared(_, _).


                 /*******************************
                 *        JOURNAL REPLAY        *
                 *******************************/

%   qr_replay(+M, +Entries, -Result): Entries = [e(Op, Text), ...] in journal order, Op one
%   of assert, retract, retractall (R-W2). Result: ok(Applied, Failures), Failures =
%   [f(Index, Message), ...] with 0-based indexes; a failed entry changes nothing (R-B5).
qr_replay(M, Entries, ok(Applied, Failures)) :-
    qr_replay(Entries, M, 0, 0, Applied, Failures).

qr_replay([], _, _, A, A, []).
qr_replay([e(Op, Text)|Es], M, I, A0, A, Failures) :-
    (   catch(qr_apply(Op, M, Text), E, true)
    ->  true
    ;   E = ql("could not be applied")
    ),
    I1 is I + 1,
    (   var(E)
    ->  A1 is A0 + 1,
        Failures = Failures1
    ;   quipu_logic:ql_error_text(E, Msg),
        A1 = A0,
        Failures = [f(I, Msg)|Failures1]
    ),
    qr_replay(Es, M, I1, A1, A, Failures1).

qr_apply(assert, M, Text) :-
    quipu_logic:ql_parse(Text, M, T, Names),
    quipu_logic:ql_clause_parts(T, H, B),
    quipu_logic:ql_store(M, T, Names),
    functor(H, N, A),
    (   B == true, \+ qr_record_predicate(N, A)
    ->  quipu_knowledge:qk_note_source(M, H, Names, journal)
    ;   true
    ).
qr_apply(retract, M, Text) :-
    quipu_logic:ql_parse(Text, M, T, _),
    quipu_logic:ql_check_head(T),
    (   quipu_logic:ql_clause(M, T, true, Ref)
    ->  quipu_logic:ql_erase(Ref)
    ;   true
    ).
qr_apply(retractall, M, Text) :-
    quipu_logic:ql_parse(Text, M, T, _),
    quipu_logic:ql_check_head(T),
    quipu_logic:ql_erase_matching(M, T, _).
