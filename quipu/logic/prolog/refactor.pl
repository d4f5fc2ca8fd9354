/*  quipu_refactor: engine-side helpers of find_predicate_references, rename_predicate and
    get_kb_overview (quipu/logic/refactor.py, spec §4.8-§4.10).

    Loaded after quipu_logic (Engine.load_helper); stores, erases and renders through its
    predicates so that author variable names (ql_names/3) and the rule index (ql_rule/4) stay
    right. Rules are visited through ql_rule/4, which quipu_logic keeps in store order: that is
    the memory's database order across predicates (R-RN3).

    A reference to Name/Arity (Arity -1: any arity) is found by walking a rule body (R-FR3):
    goal positions (the body, control constructs, meta-call arguments) match atoms and
    compounds, a call/N closure counts its extra arguments, and any other argument is walked
    as data, where compounds match. Each occurrence carries its context: none (unqualified) or
    the innermost module qualifier Q of Q:Goal.
*/
:- module(quipu_refactor, []).

:- use_module(library(lists)).
:- use_module(library(apply)).

%   qr_guard(:Goal, -Result): Goal binds Result; errors become error(Kind, Message).
qr_guard(Goal, Result) :-
    catch(( call(Goal) -> true ; Result = error(failed, "failed") ),
          E,
          quipu_logic:ql_guard_error(E, Result)).

qr_hidden(tms_justification).
qr_hidden(zpm_source).
qr_hidden(portray).
qr_hidden(term_expansion).
qr_hidden(goal_expansion).


                 /*******************************
                 *         BODY WALKING         *
                 *******************************/

%   qr_goal(+Goal, +Ctx, +Spec, -Out, -Hits0, +Hits): walk a goal; Out is Goal with every
%   selected occurrence renamed; Hits collects the context of every occurrence of the target
%   (selected or not). Spec = spec(Name, Arity, NewName, Select), Select = all | local(Owner)
%   | qualified(Q); with all, nothing is renamed.
qr_goal(G, _, _, G, H, H) :-
    var(G), !.
qr_goal(Q:G, _, Spec, Q:G2, H0, H) :-
    atom(Q), !,
    qr_goal(G, Q, Spec, G2, H0, H).
qr_goal(G, Ctx, Spec, G2, H0, H) :-
    atom(G), !,
    qr_match(G, 0, Ctx, Spec, G, G2, H0, H).
qr_goal(G, Ctx, Spec, G2, H0, H) :-
    compound(G), !,
    compound_name_arguments(G, N, Args),
    length(Args, A),
    qr_args(Args, 1, N, A, Ctx, Spec, Args2, H1, H),
    compound_name_arguments(G1, N, Args2),
    qr_match(G1, A, Ctx, Spec, G1, G2, H0, H1).
qr_goal(G, _, _, G, H, H).

%   qr_data(+Term, +Ctx, +Spec, -Out, -Hits0, +Hits): an argument that is not a goal.
qr_data(T, _, _, T, H, H) :-
    \+ compound(T), !.
qr_data(Q:T, _, Spec, Q:T2, H0, H) :-
    atom(Q), !,
    qr_data(T, Q, Spec, T2, H0, H).
qr_data(T, Ctx, Spec, T2, H0, H) :-
    compound_name_arguments(T, N, Args),
    length(Args, A),
    qr_data_args(Args, Ctx, Spec, Args2, H1, H),
    compound_name_arguments(T1, N, Args2),
    qr_match(T1, A, Ctx, Spec, T1, T2, H0, H1).

qr_data_args([], _, _, [], H, H).
qr_data_args([X|Xs], Ctx, Spec, [Y|Ys], H0, H) :-
    qr_data(X, Ctx, Spec, Y, H0, H1),
    qr_data_args(Xs, Ctx, Spec, Ys, H1, H).

qr_args([], _, _, _, _, _, [], H, H).
qr_args([X|Xs], I, N, A, Ctx, Spec, [Y|Ys], H0, H) :-
    (   qr_meta(N, A, I, Extra)
    ->  (   Extra == 0
        ->  qr_goal(X, Ctx, Spec, Y, H0, H1)
        ;   Extra == hat
        ->  qr_hat(X, Ctx, Spec, Y, H0, H1)
        ;   qr_closure(X, Extra, Ctx, Spec, Y, H0, H1)
        )
    ;   qr_data(X, Ctx, Spec, Y, H0, H1)
    ),
    I1 is I + 1,
    qr_args(Xs, I1, N, A, Ctx, Spec, Ys, H1, H).

%   V^Goal in bagof/setof/aggregate_all.
qr_hat(T, Ctx, Spec, T2, H0, H) :-
    (   nonvar(T), T = V^G
    ->  qr_hat(G, Ctx, Spec, G2, H0, H),
        T2 = V^G2
    ;   qr_goal(T, Ctx, Spec, T2, H0, H)
    ).

%   A closure called with Extra more arguments (call/N).
qr_closure(C, _, _, _, C, H, H) :-
    var(C), !.
qr_closure(Q:C, Extra, _, Spec, Q:C2, H0, H) :-
    atom(Q), !,
    qr_closure(C, Extra, Q, Spec, C2, H0, H).
qr_closure(C, Extra, Ctx, Spec, C2, H0, H) :-
    atom(C), !,
    qr_match(C, Extra, Ctx, Spec, C, C2, H0, H).
qr_closure(C, Extra, Ctx, Spec, C2, H0, H) :-
    compound(C), !,
    compound_name_arguments(C, N, Args),
    length(Args, A0),
    A is A0 + Extra,
    qr_data_args(Args, Ctx, Spec, Args2, H1, H),
    compound_name_arguments(C1, N, Args2),
    qr_match(C1, A, Ctx, Spec, C1, C2, H0, H1).
qr_closure(C, _, _, _, C, H, H).

%   qr_meta(+Name, +Arity, +Index, -Extra): argument Index is a goal (Extra 0), a closure
%   with Extra more arguments, or a Var^Goal (hat).
qr_meta((','), 2, _, 0).
qr_meta((;), 2, _, 0).
qr_meta((->), 2, _, 0).
qr_meta((*->), 2, _, 0).
qr_meta((\+), 1, 1, 0).
qr_meta(not, 1, 1, 0).
qr_meta(once, 1, 1, 0).
qr_meta(ignore, 1, 1, 0).
qr_meta(forall, 2, _, 0).
qr_meta(call, A, 1, Extra) :- A >= 1, Extra is A - 1.
qr_meta(findall, 3, 2, 0).
qr_meta(findall, 4, 2, 0).
qr_meta(aggregate_all, 3, 2, hat).
qr_meta(aggregate_all, 4, 3, hat).
qr_meta(bagof, 3, 2, hat).
qr_meta(setof, 3, 2, hat).
qr_meta(catch, 3, 1, 0).
qr_meta(catch, 3, 3, 0).
qr_meta(limit, 2, 2, 0).
qr_meta(offset, 2, 2, 0).

%   qr_match(+Term, +EffectiveArity, +Ctx, +Spec, +In, -Out, -Hits0, +Hits)
qr_match(T, A, Ctx, spec(N, Want, New, Select), In, Out, [Ctx|H], H) :-
    callable(T),
    ( atom(T) -> TN = T ; compound_name_arity(T, TN, _) ),
    TN == N,
    ( Want =:= -1 -> true ; A =:= Want ),
    !,
    (   qr_selected(Select, Ctx)
    ->  qr_rename_functor(In, New, Out)
    ;   Out = In
    ).
qr_match(_, _, _, _, In, In, H, H).

qr_selected(local(Owner), Ctx) :- ( Ctx == none ; Ctx == Owner ), !.
qr_selected(qualified(Q), Ctx) :- Ctx == Q.

qr_rename_functor(T, New, New) :- atom(T), !.
qr_rename_functor(T, New, T2) :-
    compound_name_arguments(T, _, Args),
    compound_name_arguments(T2, New, Args).

%   qr_rule(+M, -Ref, -Head, -Body, -Names): the rules of M in database order, with the
%   author's names (a stored copy when there is one).
qr_rule(M, Ref, H, B, Names) :-
    quipu_logic:ql_rule(M, _, _, Ref),
    catch(clause(M:H0, B0, Ref), _, fail),
    (   quipu_logic:ql_names(Ref, (H :- B), Names)
    ->  true
    ;   H = H0, B = B0, Names = []
    ).

%   qr_texts(+Head, +Body, +Names, -HeadText, -BodyText): both rendered with one name map.
qr_texts(H, B, Names, HT, BT) :-
    quipu_logic:ql_name_all((H :- B), Names, All),
    quipu_logic:ql_render_named(H, All, HT),
    quipu_logic:ql_render_named(B, All, BT).


                 /*******************************
                 *          REFERENCES          *
                 *******************************/

%   qr_refs(+Ms, +Name, +Arity, -Result): find_predicate_references over memories Ms.
%   ok(Rules, Facts, Justs, Cross): Rules [r(M, Head, Body)], Justs [j(M, Assumption, Fact)],
%   Cross [x(M, Qualifier, Head, Body)] (one per rule and foreign qualifier), Facts a count.
qr_refs(Ms, N, A, Result) :-
    qr_guard(qr_refs_(Ms, N, A, Result), Result).

qr_refs_(Ms, N, A, ok(Rules, Facts, Justs, Cross)) :-
    Spec = spec(N, A, N, all),
    findall(Found, ( member(M, Ms), qr_rule_ref(M, Spec, Found) ), Founds),
    findall(r(MS, HT, BT), member(local(MS, HT, BT), Founds), Rules),
    findall(x(MS, QS, HT, BT), member(cross(MS, QS, HT, BT), Founds), Cross),
    aggregate_all(count, ( member(M, Ms), qr_target_fact(M, N, A) ), Facts),
    findall(j(MS, AT, FT), ( member(M, Ms), qr_justification(M, N, A, MS, AT, FT) ), Justs).

qr_rule_ref(M, Spec, Found) :-
    qr_rule(M, _, H, B, Names),
    qr_goal(B, none, Spec, _, Hits, []),
    sort(Hits, Qs),
    Qs \== [],
    qr_texts(H, B, Names, HT, BT),
    atom_string(M, MS),
    (   once(( memberchk(none, Qs) ; memberchk(M, Qs) )),
        Found = local(MS, HT, BT)
    ;   member(Q, Qs),
        Q \== none, Q \== M,
        atom_string(Q, QS),
        Found = cross(MS, QS, HT, BT)
    ).

qr_target_fact(M, N, A) :-
    \+ qr_hidden(N),
    qr_head(M, N, A, H),
    clause(M:H, true).

%   qr_head(+M, +Name, +Arity, -Head): a user predicate of M with that name (Arity -1: any).
qr_head(M, N, A, H) :-
    (   A =:= -1
    ->  quipu_logic:ql_user_predicate(M, H),
        functor(H, N, _)
    ;   functor(H, N, A),
        quipu_logic:ql_user_predicate(M, H)
    ).

qr_justification(M, N, A, MS, AT, FT) :-
    current_predicate(M:tms_justification/2),
    clause(M:tms_justification(F0, _), true, Ref),
    nonvar(F0),
    qr_functor_is(F0, N, A),
    (   quipu_logic:ql_names(Ref, (tms_justification(F, Asm) :- true), Names)
    ->  true
    ;   clause(M:tms_justification(F, Asm), true, Ref), Names = []
    ),
    quipu_logic:ql_name_all(tms_justification(F, Asm), Names, All),
    quipu_logic:ql_render_named(F, All, FT),
    (   atom(Asm) -> atom_string(Asm, AT) ; quipu_logic:ql_render_named(Asm, All, AT) ),
    atom_string(M, MS).

qr_functor_is(T, N, A) :-
    callable(T),
    functor(T, N, TA),
    ( A =:= -1 -> true ; TA =:= A ).


                 /*******************************
                 *            RENAMING          *
                 *******************************/

%   qr_arities(+M, +Name, -Result): ok(Arities), ascending, of the user predicates of M named
%   Name that have clauses (R-RN1, error 6).
qr_arities(M, N, Result) :-
    qr_guard(qr_arities_(M, N, Result), Result).

qr_arities_(M, N, ok(As)) :-
    findall(A, ( qr_head(M, N, -1, H), functor(H, _, A), clause(M:H, _) ), As0),
    sort(As0, As).

%   qr_has_clauses(+M, +Name, +Arity, -Result): ok(true) / ok(false) (error 7).
qr_has_clauses(M, N, A, ok(R)) :-
    (   qr_head(M, N, A, H), clause(M:H, _)
    ->  R = true
    ;   R = false
    ).

%   qr_builtin(+Name, +Arity, -Result): ok(true) when Name/Arity cannot be a user predicate.
qr_builtin(N, A, ok(R)) :-
    functor(H, N, A),
    (   catch(quipu_logic:ql_check_head(H), _, fail) -> R = false ; R = true ).

%   qr_rename(+M, +Old, +A, +New, +Apply, -Result): rename Old/A to New/A in M (R-RN2):
%   heads, local body references, justifications and source records. With Apply = false
%   nothing changes (R-RN5). ok(Facts, Rules, Ids, Entries): Ids the renamed heads of the
%   rules whose body changed, distinct, in database order; Entries [e(Op, Text)] the journal
%   batch (R-RN6).
qr_rename(M, Old, A, New, Apply, Result) :-
    qr_guard(qr_rename_(M, Old, A, New, Apply, Result), Result).

qr_rename_(M, Old, A, New, Apply, ok(Facts, NRules, Ids, Entries)) :-
    Spec = spec(Old, A, New, local(M)),
    functor(OldHead, Old, A),
    % The rules whose body changes, in database order, with their new heads.
    findall(Ref-(H2 :- B2)-Names,
            ( qr_rule(M, Ref, H, B, Names),
              qr_goal(B, none, Spec, B2, Hits, []),
              include(qr_selected(local(M)), Hits, [_|_]),
              qr_new_head(H, Old, A, New, H2) ),
            Changed),
    length(Changed, NRules),
    findall(Id, ( member(_-(H2 :- _)-Names, Changed),
                  quipu_logic:ql_name_all(H2, Names, All),
                  quipu_logic:ql_render_named(H2, All, Id) ), Ids0),
    qr_distinct(Ids0, Ids),
    aggregate_all(count, ( qr_head(M, Old, A, OldHead), clause(M:OldHead, true) ), Facts),
    % The predicates to rebuild: Old/A, every other predicate with a changed rule, and the
    % records whose fact is Old/A. Each is rebuilt whole so clause order is kept.
    findall(P, ( member(Ref-_-_, Changed), clause(M:PH, _, Ref), functor(PH, PN, PA),
                 PN/PA \== Old/A, P = PN/PA ), Ps0),
    sort(Ps0, Ps1),
    (   qr_head(M, Old, A, OldHead), clause(M:OldHead, _) -> Ps2 = [Old/A|Ps1] ; Ps2 = Ps1 ),
    (   qr_record_hit(M, tms_justification, Old, A) -> Ps3 = [tms_justification/2] ; Ps3 = [] ),
    (   qr_record_hit(M, zpm_source, Old, A) -> Ps4 = [zpm_source/2] ; Ps4 = [] ),
    append([Ps2, Ps3, Ps4], Ps),
    maplist(qr_plan(M, Spec, Old, A, New), Ps, Plans),
    foldl(qr_plan_entries, Plans, Entries, []),
    (   Apply == true
    ->  transaction(maplist(qr_apply(M), Plans))
    ;   true
    ).

qr_new_head(H, Old, A, New, H2) :-
    (   functor(H, Old, A) -> qr_rename_functor(H, New, H2) ; H2 = H ).

qr_record_hit(M, R, Old, A) :-
    current_predicate(M:R/2),
    functor(RH, R, 2),
    clause(M:RH, true),
    arg(1, RH, F),
    nonvar(F),
    functor(F, Old, A),
    !.

%   qr_plan(+M, +Spec, +Old, +A, +New, +PI, -Plan): plan(PI, Refs, NewClauses, Journal):
%   the clauses to erase and the clauses (with names) that replace them, in order.
qr_plan(M, Spec, Old, A, New, PN/PA, plan(PN/PA, Refs, Clauses, Journal)) :-
    functor(PH, PN, PA),
    findall(Ref-C-Names,
            ( clause(M:PH, _, Ref),
              qr_stored(M, Ref, C0, Names),
              qr_rewrite(PN, C0, Spec, Old, A, New, C) ),
            Items),
    findall(Ref, member(Ref-_-_, Items), Refs),
    findall(C-Names, member(_-C-Names, Items), Clauses),
    qr_general_text(PH, GeneralText),
    (   PN == zpm_source
    ->  % Records are not journaled (§5.4); only the stale ones of the old name go.
        functor(OH, Old, A),
        qr_text(zpm_source(OH, _), [], Stale),
        Journal = [e(retractall, Stale)]
    ;   findall(e(assert, T), ( member(C-Names, Clauses), qr_text(C, Names, T) ), Asserts),
        Journal = [e(retractall, GeneralText)|Asserts]
    ).

qr_stored(M, Ref, C, Names) :-
    (   quipu_logic:ql_names(Ref, C, Names)
    ->  true
    ;   clause(M:H, B, Ref), C = (H :- B), Names = []
    ).

%   The new form of one clause of a rebuilt predicate.
qr_rewrite(tms_justification, (H :- true), _, Old, A, New, (H2 :- true)) :- !,
    qr_record_rename(H, Old, A, New, H2).
qr_rewrite(zpm_source, (H :- true), _, Old, A, New, (H2 :- true)) :- !,
    qr_record_rename(H, Old, A, New, H2).
qr_rewrite(_, (H :- B), Spec, Old, A, New, (H2 :- B2)) :-
    qr_new_head(H, Old, A, New, H2),
    (   B == true
    ->  B2 = true
    ;   qr_goal(B, none, Spec, B2, _, [])
    ).

qr_record_rename(R, Old, A, New, R2) :-
    R =.. [Name, F|Rest],
    (   nonvar(F), functor(F, Old, A) -> qr_rename_functor(F, New, F2) ; F2 = F ),
    R2 =.. [Name, F2|Rest].

qr_plan_entries(plan(_, _, _, Journal), E0, E) :-
    append(Journal, E, E0).

qr_apply(M, plan(_, Refs, Clauses, _)) :-
    maplist(quipu_logic:ql_erase, Refs),
    forall(member(C-Names, Clauses), quipu_logic:ql_store(M, C, Names)).

qr_general_text(H, Text) :-
    functor(H, N, A),
    functor(G, N, A),
    qr_text(G, [], Text).

%   qr_text(+Clause, +Names, -Text): journal text (R-W5): author names, a variable without a
%   name '_' when it occurs once, a fresh name otherwise, so the text re-parses to the clause.
qr_text(C, Names, Text) :-
    term_singletons(C, Singles),
    qr_anonymous(Singles, Names, Anon),
    append(Names, Anon, Names1),
    quipu_logic:ql_name_all(C, Names1, All),
    quipu_logic:ql_render_named(C, All, Text).

qr_anonymous([], _, []).
qr_anonymous([V|Vs], Names, Anon) :-
    (   member(_=W, Names), W == V
    ->  Anon = Anon1
    ;   Anon = ['_'=V|Anon1]
    ),
    qr_anonymous(Vs, Names, Anon1).

qr_distinct([], []).
qr_distinct([X|Xs], [X|Ys]) :-
    exclude(==(X), Xs, Rest),
    qr_distinct(Rest, Ys).

%   qr_requalify(+M, +Target, +Old, +A, +New, +Apply, -Result): the rules of M that
%   reference Target:Old/A (R-RN4). ok(Refs, Rules, Entries); with Apply = true those
%   references become Target:New/A.
qr_requalify(M, Target, Old, A, New, Apply, Result) :-
    qr_guard(qr_requalify_(M, Target, Old, A, New, Apply, Result), Result).

qr_requalify_(M, Target, Old, A, New, Apply, ok(Refs, NRules, Entries)) :-
    Spec = spec(Old, A, New, qualified(Target)),
    findall(Ref-N,
            ( qr_rule(M, Ref, _, B, _),
              qr_goal(B, none, Spec, _, Hits, []),
              include(qr_selected(qualified(Target)), Hits, Sel),
              length(Sel, N), N > 0 ),
            Changed),
    length(Changed, NRules),
    aggregate_all(sum(K), member(_-K, Changed), Refs),
    findall(PN/PA, ( member(Ref-_, Changed), clause(M:PH, _, Ref), functor(PH, PN, PA) ), Ps0),
    sort(Ps0, Ps),
    % Old/A is not renamed in M itself: only the qualified references change.
    maplist(qr_plan(M, Spec, '$qr_none', A, New), Ps, Plans),
    foldl(qr_plan_entries, Plans, Entries, []),
    (   Apply == true
    ->  transaction(maplist(qr_apply(M), Plans))
    ;   true
    ).


                 /*******************************
                 *            OVERVIEW          *
                 *******************************/

%   qr_overview(+M, +Max, -Result): ok(Preds, Assumptions): Preds [p(Name, Arity, Clauses,
%   Rules, Samples)] for every predicate of M with clauses (the caller filters names), Samples
%   the first Max clauses rendered; Assumptions the distinct assumption names, sorted.
qr_overview(M, Max, Result) :-
    qr_guard(qr_overview_(M, Max, Result), Result).

qr_overview_(M, Max, ok(Preds, Names)) :-
    findall(p(NS, A, C, R, Samples),
            ( quipu_logic:ql_user_predicate(M, H),
              predicate_property(M:H, number_of_clauses(C)),
              C > 0,
              (   predicate_property(M:H, number_of_rules(R)) -> true ; R = 0 ),
              functor(H, N, A),
              atom_string(N, NS),
              findall(T, limit(Max, ( clause(M:H, B, Ref),
                                      quipu_logic:ql_clause_text(Ref, H, B, T) )), Samples)
            ),
            Preds),
    findall(AT, ( current_predicate(M:tms_justification/2),
                  clause(M:tms_justification(_, Asm), true),
                  (   atom(Asm) -> atom_string(Asm, AT) ; quipu_logic:ql_render(Asm, [], AT) ) ),
            Names0),
    sort(Names0, Names).
