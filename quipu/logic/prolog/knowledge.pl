/*  quipu_knowledge: engine-side helpers of the knowledge tools (quipu/logic/knowledge.py).

    Loaded after quipu_logic (Engine.load_helper) and built on its parser, store, renderer and
    goal check, which it calls module-qualified. Each mutation helper parses and checks all of
    its text first and changes the memory only when everything is valid, in this one call, so
    a tool either changes nothing or all it should (R-W4, R-U1). Mutation helpers answer the
    clause texts the journal needs: author variable names (R-W5), every other variable written
    '_' so that the text re-parses to the same clause.

    Source records (§5.4): zpm_source(Fact, Source) facts of the memory, at most one per fact
    (up to variable renaming): a fact entering again replaces its record, so the record always
    tells how the fact most recently entered. They are not journaled: replay and snapshot
    loading record journal / snapshot themselves (R-TM9), through qk_note_source/3.
*/
:- module(quipu_knowledge, []).

:- use_module(library(lists)).
:- use_module(library(apply)).


                 /*******************************
                 *            COMMON            *
                 *******************************/

%   qk_guard(:Goal, -Result): Goal binds Result; errors become error(Kind, Message).
qk_guard(Goal, Result) :-
    catch(( call(Goal) -> true ; Result = error(failed, "failed") ),
          E,
          qk_guard_error(E, Result)).

qk_guard_error(qk(rule), error(rule, "rule syntax")) :- !.
qk_guard_error(qk(not_rule), error(rejected, "the text is not a rule Head :- Body")) :- !.
qk_guard_error(E, Result) :-
    quipu_logic:ql_guard_error(E, Result).

%   qk_text(+Term, +Names, -Text): the journal text of a clause or pattern.
qk_text(Term, Names, Text) :-
    term_variables(Term, Vars),
    qk_anonymous(Vars, Names, Extra),
    append(Names, Extra, All),
    quipu_logic:ql_render_named(Term, All, Text).

qk_anonymous([], _, []).
qk_anonymous([V|Vs], Names, Extra) :-
    (   member(_=W, Names), W == V
    ->  Extra = Extra1
    ;   Extra = ['_'=V|Extra1]
    ),
    qk_anonymous(Vs, Names, Extra1).

qk_reject_rule(T) :-
    (   nonvar(T), ( T = (_ :- _) ; T = (:- _) )
    ->  throw(qk(rule))
    ;   true
    ).

%   qk_note_source(+M, +Fact, +Source): Fact (a term) most recently entered M through Source.
qk_note_source(M, Fact, Source) :-
    qk_note_source(M, Fact, [], Source).

qk_note_source(M, Fact, Names, Source) :-
    forall(( copy_term(Fact, Probe),
             clause(M:zpm_source(Probe, _), true, Ref),
             clause(_:zpm_source(Stored, _), true, Ref),
             Stored =@= Fact
           ),
           quipu_logic:ql_erase(Ref)),
    quipu_logic:ql_store(M, zpm_source(Fact, Source), Names).

qk_record_predicate(tms_justification, 2).
qk_record_predicate(zpm_source, 2).


                 /*******************************
                 *           MUTATIONS          *
                 *******************************/

%   qk_assert(+M, +Text, -Result): remember_fact. ok(JournalText); a fact's source becomes
%   interactive (R-F3). A rule is stored as a rule (R-F2).
qk_assert(M, Text, Result) :-
    qk_guard(qk_assert_(M, Text, Result), Result).

qk_assert_(M, Text, ok(Out)) :-
    quipu_logic:ql_parse(Text, M, T, Names),
    quipu_logic:ql_clause_parts(T, H, B),
    qk_text(T, Names, Out),
    quipu_logic:ql_store(M, T, Names),
    (   B == true
    ->  qk_note_source(M, H, Names, interactive)
    ;   true
    ).

%   qk_define(+M, +Text, -Result): define_rule; Text is "Head :- Body" (R-D1). ok.
qk_define(M, Text, Result) :-
    qk_guard(qk_define_(M, Text, Result), Result).

qk_define_(M, Text, ok) :-
    quipu_logic:ql_parse(Text, M, T, Names),
    (   nonvar(T), T = (_ :- _)
    ->  true
    ;   throw(qk(not_rule))
    ),
    quipu_logic:ql_store(M, T, Names).

%   qk_forget(+M, +Text, -Result): forget_fact; the first fact unifying goes, one copy
%   (R-FF1); records stay (R-FF2). ok(true, PatternText) or ok(false, PatternText).
qk_forget(M, Text, Result) :-
    qk_guard(qk_forget_(M, Text, Result), Result).

qk_forget_(M, Text, ok(Found, Out)) :-
    quipu_logic:ql_parse(Text, M, T, Names),
    quipu_logic:ql_check_head(T),
    qk_text(T, Names, Out),
    (   quipu_logic:ql_clause(M, T, true, Ref)
    ->  quipu_logic:ql_erase(Ref),
        Found = true
    ;   Found = false
    ).

%   qk_update(+M, +OldText, +NewText, -Result): update_fact, all or nothing (R-U1).
%   ok(done, OldText, NewText) or ok(missing).
qk_update(M, OldText, NewText, Result) :-
    qk_guard(qk_update_(M, OldText, NewText, Result), Result).

qk_update_(M, OldText, NewText, Result) :-
    quipu_logic:ql_parse(NewText, M, New, NewNames),
    qk_reject_rule(New),
    quipu_logic:ql_parse(OldText, M, Old, OldNames),
    quipu_logic:ql_check_head(Old),
    quipu_logic:ql_clause_parts(New, NewHead, _),
    qk_text(Old, OldNames, OldOut),
    qk_text(New, NewNames, NewOut),
    (   quipu_logic:ql_clause(M, Old, true, Ref)
    ->  quipu_logic:ql_erase(Ref),
        quipu_logic:ql_store(M, New, NewNames),
        qk_note_source(M, NewHead, NewNames, interactive),
        Result = ok(done, OldOut, NewOut)
    ;   Result = ok(missing)
    ).

%   qk_upsert(+M, +Text, -Result): upsert_fact; every clause of name(First, _, ...) goes,
%   same arity only (R-UP1), then the fact is appended. ok(PatternText, FactText).
qk_upsert(M, Text, Result) :-
    qk_guard(qk_upsert_(M, Text, Result), Result).

qk_upsert_(M, Text, ok(PatternOut, FactOut)) :-
    quipu_logic:ql_parse(Text, M, T, Names),
    qk_reject_rule(T),
    quipu_logic:ql_clause_parts(T, H, _),
    qk_key_pattern(H, Pattern),
    qk_text(Pattern, Names, PatternOut),
    qk_text(T, Names, FactOut),
    quipu_logic:ql_erase_matching(M, Pattern, _),
    quipu_logic:ql_store(M, T, Names),
    qk_note_source(M, H, Names, interactive).

qk_key_pattern(H, Pattern) :-
    (   compound(H)
    ->  compound_name_arity(H, N, A),
        compound_name_arity(Pattern, N, A),
        (   A > 0
        ->  arg(1, H, First),
            arg(1, Pattern, First)
        ;   true
        )
    ;   Pattern = H
    ).

%   qk_clear(+M, +Text, -Result): clear_context; every clause whose head unifies, facts and
%   rules (R-CC1). TMS records are never touched (R-CC3): a pattern on them clears nothing.
%   ok(Count, PatternText) or ok(records, PatternText).
qk_clear(M, Text, Result) :-
    qk_guard(qk_clear_(M, Text, Result), Result).

qk_clear_(M, Text, ok(Status, Out)) :-
    quipu_logic:ql_parse(Text, M, T, Names),
    quipu_logic:ql_check_head(T),
    qk_text(T, Names, Out),
    functor(T, N, A),
    (   qk_record_predicate(N, A)
    ->  Status = records
    ;   quipu_logic:ql_erase_matching(M, T, Status)
    ).


                 /*******************************
                 *            SCHEMA            *
                 *******************************/

%   qk_schema(+M, -Result): ok([s(Name, Arity, Clauses, Rules), ...]) for every dynamic
%   predicate of M with at least one clause (R-I1); the caller filters names.
qk_schema(M, Result) :-
    qk_guard(qk_schema_(M, Result), Result).

qk_schema_(M, ok(Preds)) :-
    findall(s(NS, A, C, R),
            ( quipu_logic:ql_user_predicate(M, H),
              predicate_property(M:H, number_of_clauses(C)),
              C > 0,
              (   predicate_property(M:H, number_of_rules(R))
              ->  true
              ;   R = 0
              ),
              functor(H, N, A),
              atom_string(N, NS)
            ),
            Preds).


                 /*******************************
                 *     SOLVING UNTRUSTED GOALS  *
                 *******************************/

%   qk_render_solutions(+M, +Text, +Max, -Result): the values of X in the first Max
%   solutions of the goal, each rendered canonically (verify_consistency, R-V2).
%   Result: ok(Texts) | refused(Why) | syntax(Msg) | limit(Kind); runtime errors: ok([]).
qk_render_solutions(M, Text, Max, Result) :-
    (   catch(qk_render_solutions_(M, Text, Max, R0), E, qk_solve_error(E, R0))
    ->  Result = R0
    ;   Result = error(prolog, "the solution helper failed")
    ).

qk_render_solutions_(M, Text, Max, ok(Texts)) :-
    quipu_logic:ql_parse(Text, M, Goal, Names),
    memberchk('X'=X, Names),
    quipu_logic:ql_memories(Mounted),
    quipu_logic:ql_safe_goal(Goal, M, Mounted),
    quipu_logic:ql_unmounted_fails(Goal, M, Mounted, Run),
    quipu_logic:ql_silently(quipu_logic:ql_solutions(M:Run, X, Max, Values)),
    maplist(qk_render_value, Values, Texts).

qk_render_value(V, Text) :-
    quipu_logic:ql_render(V, [], Text).

qk_solve_error(E, Result) :-
    quipu_logic:ql_query_error(E, R0),
    (   R0 = ok(_, _)
    ->  Result = ok([])                  % a runtime error: no solutions (R-Q5)
    ;   Result = R0
    ).


                 /*******************************
                 *        PROOF TREES (4.7)     *
                 *******************************/

%   qk_explain(+M, +Text, +MaxDepth, -Result): the proof of the first solution (R-E1..R-E5).
%   Result: ok(false) | ok(true, Tree) | refused(Why) | syntax(Msg) | limit(Kind), where
%   Tree = node(GoalText, Rule, Children), Rule = fact | builtin | conjunction | RuleText,
%   Children = [Tree, ...] | truncated, or node(GoalText, graph, [], Tx) for a knowledge-graph
%   fact (rdf/3 ...) and the transaction that asserted it. MaxDepth < 0: no limit.
qk_explain(M, Text, MaxDepth, Result) :-
    (   catch(qk_explain_(M, Text, MaxDepth, R0), E, qk_explain_error(E, R0))
    ->  Result = R0
    ;   Result = error(prolog, "the explain helper failed")
    ).

qk_explain_error(E, Result) :-
    quipu_logic:ql_query_error(E, R0),
    (   R0 = ok(_, _)
    ->  Result = ok(false)               % a runtime error: not proven (R-Q5)
    ;   Result = R0
    ).

qk_explain_(M, Text, MaxDepth, Result) :-
    quipu_logic:ql_parse(Text, M, Goal, _),
    quipu_logic:ql_memories(Mounted),
    quipu_logic:ql_safe_goal(Goal, M, Mounted),
    (   quipu_logic:ql_silently(quipu_knowledge:qk_solve(Goal, M, How))
    ->  qk_tree(n(Goal, How), 0, MaxDepth, Tree),
        Result = ok(true, Tree)
    ;   Result = ok(false)
    ).

%   qk_solve(+Goal, +M, -How): prove Goal in M, keeping how. How = fact | builtin |
%   rule(Ref, Nodes) | conjunction(Nodes), Nodes = [n(Goal, How), ...].
qk_solve(G, _, _) :-
    var(G), !,
    throw(error(instantiation_error, _)).
qk_solve(Q:G, _, How) :- !,
    atom(Q),
    quipu_logic:ql_memory(Q),            % an unmounted memory has no solutions (R-M2)
    qk_solve(G, Q, How).
qk_solve((A, B), M, conjunction(Nodes)) :- !,
    prolog_current_choice(Choice),
    qk_body((A, B), M, Choice, Nodes).
qk_solve(G, M, How) :-
    quipu_logic:ql_memory_predicate(M, G), !,
    prolog_current_choice(Choice),
    clause(M:G, Body, Ref),
    (   Body == true
    ->  How = fact
    ;   How = rule(Ref, Nodes),
        qk_body(Body, M, Choice, Nodes)
    ).
qk_solve(G, M, graph(Tx)) :-              % a knowledge-graph fact: a leaf with its transaction
    qk_graph_goal(G, M), !,
    catch(M:G, E, qk_builtin_error(E)),
    quipu_graph:qg_proof_tx(G, Tx).
qk_solve(G, M, builtin) :-
    catch(M:G, E, qk_builtin_error(E)).

qk_graph_goal(G, M) :-
    callable(G),
    functor(G, N, A),
    quipu_logic:ql_graph_predicate(N/A),
    predicate_property(M:G, implementation_module(quipu_graph)).

qk_builtin_error(E) :-
    (   quipu_logic:ql_limit_error(E, _)
    ->  throw(E)
    ;   fail
    ).

%   qk_body(+Body, +M, +Choice, -Nodes): the conjuncts left to right; a cut cuts the
%   clause choice (taken before clause/3) as it would in the rule itself.
qk_body((A, B), M, Choice, Nodes) :- !,
    qk_body(A, M, Choice, NA),
    qk_body(B, M, Choice, NB),
    append(NA, NB, Nodes).
qk_body(!, _, Choice, [n(!, builtin)]) :- !,
    prolog_cut_to(Choice).
qk_body(G, M, _, [n(G, How)]) :-
    qk_solve(G, M, How).

qk_tree(n(G, graph(Tx)), _, _, node(GoalText, graph, [], Tx)) :- !,
    quipu_logic:ql_render(G, [], GoalText).
qk_tree(n(G, How), Depth, Max, node(GoalText, Rule, Children)) :-
    quipu_logic:ql_render(G, [], GoalText),
    qk_rule(How, Rule, Nodes),
    (   Nodes == []
    ->  Children = []
    ;   Max >= 0, Depth >= Max
    ->  Children = truncated
    ;   Depth1 is Depth + 1,
        maplist(qk_subtree(Depth1, Max), Nodes, Children)
    ).

qk_subtree(Depth, Max, Node, Tree) :-
    qk_tree(Node, Depth, Max, Tree).

qk_rule(fact, fact, []).
qk_rule(builtin, builtin, []).
qk_rule(conjunction(Nodes), conjunction, Nodes).
qk_rule(rule(Ref, Nodes), Text, Nodes) :-
    clause(Head, Body, Ref),
    (   Head = _:H -> true ; H = Head ),
    quipu_logic:ql_clause_text(Ref, H, Body, Text).
