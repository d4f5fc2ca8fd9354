/*  quipu_tms: engine-side helpers of the truth maintenance tools (quipu/logic/tms.py, §5).

    Loaded after quipu_logic and quipu_knowledge (Engine.load_helper) and built on their
    parser, store, renderer and source records, which it calls module-qualified.

    Records (§5.1) are ordinary dynamic facts of the memory: tms_justification(Fact,
    Assumption) and zpm_source(Fact, Source). Justifications are journaled like any clause;
    source records are not (replay and snapshot loading write their own, R-TM9).

    Retraction is split in two calls so that the journal batch can be written between them
    (R-TM6): qt_retract_plan/3 only reads and answers the retractall texts; qt_apply/3 then
    applies exactly those texts, with the meaning replay gives them (R-W2), so the live state
    and the replayed state cannot drift apart.
*/
:- module(quipu_tms, []).

:- use_module(library(lists)).
:- use_module(library(apply)).
:- use_module(library(assoc)).


                 /*******************************
                 *            COMMON            *
                 *******************************/

qt_guard(Goal, Result) :-
    quipu_knowledge:qk_guard(quipu_tms:Goal, Result).

%   qt_justification(+M, ?Fact, ?Assumption, -Names): the justifications of M in recorded
%   order, each a fresh copy with the author variable names of its clause (R-P5).
qt_justification(M, Fact, Assumption, Names) :-
    qt_has_records(M),
    clause(M:tms_justification(F0, A0), true, Ref),
    (   quipu_logic:ql_names(Ref, (tms_justification(F1, A1) :- true), Names0)
    ->  Names = Names0
    ;   clause(_:tms_justification(F1, A1), true, Ref),
        Names = []
    ),
    F0 = F1, A0 = A1,
    Fact = F0, Assumption = A0.

qt_has_records(M) :-
    quipu_logic:ql_memory_predicate(M, tms_justification(_, _)).

%   qt_fact_exists(+M, +Fact): M holds a fact (body true) unifying with Fact.
qt_fact_exists(M, Fact) :-
    callable(Fact),
    Fact \= _:_,
    quipu_logic:ql_memory_predicate(M, Fact),
    \+ \+ clause(M:Fact, true).

%   qt_has_variant(+M, +Fact): M holds a fact identical to Fact up to variable renaming.
qt_has_variant(M, Fact) :-
    quipu_logic:ql_memory_predicate(M, Fact),
    copy_term(Fact, Probe),
    clause(M:Probe, true, Ref),
    clause(Stored0, true, Ref),
    (   Stored0 = _:Stored -> true ; Stored = Stored0 ),
    Stored =@= Fact,
    !.

qt_name_text(A, Text) :-
    (   atom(A)
    ->  atom_string(A, Text)
    ;   quipu_logic:ql_render(A, [], Text)
    ).


                 /*******************************
                 *          ASSUME (R-TM1)      *
                 *******************************/

%   qt_assume(+M, +Text, +AssumptionText, -Result): assume_fact. ok(Entries), Entries the journal
%   entries actually applied, in order: e(assert, FactText) when the fact was appended,
%   e(assert, JustificationText) when the justification was recorded (R-TM2).
qt_assume(M, Text, Assumption, Result) :-
    qt_guard(qt_assume_(M, Text, Assumption, Result), Result).

qt_assume_(M, Text, AText, ok(Entries)) :-
    atom_string(Assumption, AText),
    quipu_logic:ql_parse(Text, M, T, Names),
    quipu_knowledge:qk_reject_rule(T),
    quipu_logic:ql_clause_parts(T, H, _),
    functor(H, N, A),
    (   quipu_knowledge:qk_record_predicate(N, A)
    ->  throw(ql("a TMS record is not a fact to assume"))
    ;   true
    ),
    J = tms_justification(H, Assumption),
    quipu_knowledge:qk_text(H, Names, FactOut),
    quipu_knowledge:qk_text(J, Names, JustOut),
    (   qt_has_variant(M, H)
    ->  FactEntries = []
    ;   quipu_logic:ql_store(M, H, Names),
        quipu_knowledge:qk_note_source(M, H, Names, interactive),
        FactEntries = [e(assert, FactOut)]
    ),
    (   qt_has_variant(M, J)
    ->  JustEntries = []
    ;   quipu_logic:ql_store(M, J, Names),
        JustEntries = [e(assert, JustOut)]
    ),
    append(FactEntries, JustEntries, Entries).


                 /*******************************
                 *         RETRACT (R-TM3)      *
                 *******************************/

%   qt_retract_plan(+M, +AssumptionText, -Result): what retracting Assumption does, without
%   changing anything. ok(unknown) when no justification has that name; otherwise
%   ok(Orphans, [JustPattern|OrphanTexts]): the retractall texts of the batch (R-TM6) and
%   the number of orphaned facts. A fact is orphaned when no justification by another
%   assumption unifies with it.
qt_retract_plan(M, Assumption, Result) :-
    qt_guard(qt_retract_plan_(M, Assumption, Result), Result).

qt_retract_plan_(M, AText, Result) :-
    atom_string(Assumption, AText),
    findall(F-Names, qt_justification(M, F, Assumption, Names), Pairs0),
    (   Pairs0 == []
    ->  Result = ok(unknown)
    ;   qt_distinct(Pairs0, Pairs),
        include(qt_orphan(M, Assumption), Pairs, Orphans),
        length(Orphans, Count),
        quipu_knowledge:qk_text(tms_justification(_, Assumption), [], JustText),
        maplist(qt_fact_text, Orphans, OrphanTexts),
        Result = ok(Count, [JustText|OrphanTexts])
    ).

%   qt_distinct(+Pairs, -Distinct): the first pair of each fact up to variable renaming.
qt_distinct(Pairs, Distinct) :-
    empty_assoc(Seen),
    qt_distinct(Pairs, Seen, Distinct).

qt_distinct([], _, []).
qt_distinct([F-N|Rest], Seen, Out) :-
    variant_sha1(F, Key),
    (   get_assoc(Key, Seen, _)
    ->  Out = Out1,
        Seen1 = Seen
    ;   put_assoc(Key, Seen, t, Seen1),
        Out = [F-N|Out1]
    ),
    qt_distinct(Rest, Seen1, Out1).

%   A copy of the fact as the probe, so that clause indexing narrows the scan and the fact
%   itself stays unbound.
qt_orphan(M, Assumption, F-_) :-
    \+ ( copy_term(F, G),
         clause(M:tms_justification(G, B), true),
         B \== Assumption
       ).

qt_fact_text(F-Names, Text) :-
    quipu_knowledge:qk_text(F, Names, Text).

%   qt_apply(+M, +Texts, -Result): apply the batch's retractall texts as replay does: every
%   clause whose head unifies goes (R-W2). The first text is the justification pattern; for
%   the others, the facts' source records go too (R-TM9: a fact that is gone has no source).
%   ok(Removed).
qt_apply(M, Texts, Result) :-
    qt_guard(qt_apply_(M, Texts, Result), Result).

qt_apply_(M, [JustText|FactTexts], ok(Removed)) :-
    qt_retractall(M, JustText, _, N0),
    foldl(qt_apply_fact(M), FactTexts, N0, Removed).

qt_apply_fact(M, Text, N0, N) :-
    qt_retractall(M, Text, Head, K),
    quipu_logic:ql_erase_matching(M, zpm_source(Head, _), _),
    N is N0 + K.

qt_retractall(M, Text, T, N) :-
    quipu_logic:ql_parse(Text, M, T, _),
    quipu_logic:ql_check_head(T),
    quipu_logic:ql_erase_matching(M, T, N).


                 /*******************************
                 *            READING           *
                 *******************************/

%   qt_assumptions(+M, -Result): ok(Names), distinct assumption names in order of their first
%   recorded justification (R-LA1).
qt_assumptions(M, Result) :-
    qt_guard(qt_assumptions_(M, Result), Result).

qt_assumptions_(M, ok(Texts)) :-
    (   qt_has_records(M)
    ->  findall(A, clause(M:tms_justification(_, A), true), As)
    ;   As = []
    ),
    list_to_set(As, Distinct),
    maplist(qt_name_text, Distinct, Texts).

%   qt_facts(+M, +AssumptionText, -Result): ok(Texts), the facts justified by Assumption in
%   recorded order, rendered canonically with author names (R-GJ1).
qt_facts(M, Assumption, Result) :-
    qt_guard(qt_facts_(M, Assumption, Result), Result).

qt_facts_(M, AText, ok(Texts)) :-
    atom_string(Assumption, AText),
    findall(Text,
            ( qt_justification(M, F, Assumption, Names),
              quipu_logic:ql_render(F, Names, Text)
            ),
            Texts).

%   qt_status(+M, +Text, -Result): ok(Assumptions, Source) for get_belief_status (R-TM8,
%   R-TM9). Assumptions: the names of every justification whose fact unifies with the
%   pattern, in recorded order. Source: of the first source record whose fact unifies with
%   the pattern and still exists in M; unknown when there is none.
qt_status(M, Text, Result) :-
    qt_guard(qt_status_(M, Text, Result), Result).

qt_status_(M, Text, ok(Names, Source)) :-
    quipu_logic:ql_parse(Text, M, Pattern, _),
    findall(NameText,
            ( qt_justification(M, F, A, _),
              \+ F \= Pattern,
              qt_name_text(A, NameText)
            ),
            Names),
    (   quipu_logic:ql_memory_predicate(M, zpm_source(_, _)),
        clause(M:zpm_source(S, Src), true),
        \+ \+ ( S = Pattern, qt_fact_exists(M, S) )
    ->  qt_name_text(Src, Source)
    ;   Source = "unknown"
    ).
