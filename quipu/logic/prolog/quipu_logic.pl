/*  quipu_logic: the engine-side helper of quipu's logic memory (spec §10.4).

    Loaded once into the SWI-Prolog process that quipu drives over the Machine Query
    Interface. Python never sends user text as goal syntax: every user text arrives as a
    string argument of one of the ql_* predicates below, is parsed here (R-P1, R-P4), checked
    (R-Q4) and only then run. Each memory is a module; its clauses are ordinary dynamic
    clauses. Author variable names (R-P5) are kept in ql_names/3, keyed by clause reference.

    Results are plain terms that the MQI turns into JSON; values are tagged so that Python
    can tell atoms from strings (see quipu/logic/terms.py):
      a(Text) atom   s(Text) string   v(Name) variable   l(Items) proper list
      c(Name, Args) compound   x(Text) non-finite float   o(Text) blob   i(Text) big integer
      other numbers as numbers
*/
:- module(quipu_logic, []).

:- use_module(library(lists)).
:- use_module(library(apply)).
:- use_module(library(error)).

:- dynamic ql_memory/1.            % ql_memory(Module): a memory known to the engine
:- dynamic ql_names/3.             % ql_names(ClauseRef, Clause, VariableNames)
:- dynamic ql_former_memory/1.     % a dropped memory: its module exists but holds nothing
:- dynamic ql_rule/4.              % ql_rule(Module, Name, Arity, ClauseRef): the rules, for R-Q4

%   In module quipu_render the engine's declaration operators (dynamic, table, volatile ...)
%   are plain atoms, and every text is written there (ql_write): a user's fact table(kitchen)
%   is written back as itself, not as `table kitchen`, and reads back the same in any memory.
:- forall(( current_op(_, T, system:N), memberchk(T, [fx, fy]),
            atom(N), atom_codes(N, [C|_]), code_type(C, csymf) ),
          op(0, T, quipu_render:N)).


                 /*******************************
                 *            MEMORIES          *
                 *******************************/

%   ql_ensure_memory(+M): make M a memory module. Its only import is system, so engine
%   predicates in user (file_search_path/2 ...) are invisible to it (R-M1, §10.4).
ql_ensure_memory(M) :-
    (   ql_memory(M)
    ->  true
    ;   set_module(M:base(system)),
        set_module(M:class(user)),
        ql_graph_import(M),
        assertz(ql_memory(M))
    ).

%   ql_graph_import(+M): the graph predicates (rdf/3 ..., prolog/graph.pl) are visible in
%   every memory, before system, once that helper is loaded.
ql_graph_import(M) :-
    (   current_module(quipu_graph)
    ->  add_import_module(M, quipu_graph, start)
    ;   true
    ).

ql_memories(Ms) :-
    findall(M, ql_memory(M), Ms).

%   ql_drop_memory(+M): remove every clause of M and forget it as a memory.
ql_drop_memory(M) :-
    ql_clear_module(M),
    retractall(ql_memory(M)),
    (   ql_former_memory(M)
    ->  true
    ;   assertz(ql_former_memory(M))
    ).

ql_clear_module(M) :-
    forall(ql_user_predicate(M, Head),
           ql_erase_matching(M, Head, _)),
    forall(( current_predicate(M:N/A),
             functor(H, N, A),
             predicate_property(M:H, dynamic),
             \+ predicate_property(M:H, imported_from(_))
           ),
           % a user's own dynamic/1 (ql_local) cannot be abolished: it stays, empty
           catch(abolish(M:N/A), error(permission_error(modify, static_procedure, _), _), true)).

%   ql_reserved_name(+Name): an existing non-memory module or a library module name. A module
%   the engine made only because a clause named it (a rule body's m:G before memory m exists)
%   is not one: m is still free to become a memory (R-M2).
ql_reserved_name(Name) :-
    (   current_module(Name),
        \+ ql_memory(Name),
        \+ ql_former_memory(Name),
        \+ ql_named_only(Name)
    ->  true
    ;   absolute_file_name(library(Name), _,
                           [file_type(prolog), access(read), file_errors(fail)])
    ).

ql_named_only(Name) :-
    Name \== user,
    module_property(Name, class(user)),
    \+ module_property(Name, file(_)),
    \+ ( current_predicate(Name:N/A),
          functor(H, N, A),
          \+ predicate_property(Name:H, imported_from(_))
        ).

%   ql_no_memory(-M): the module a goal under an unmounted memory's name is checked in: a
%   memory module that is never mounted, so it holds no clauses. Checking in the named module
%   itself would create it.
ql_no_memory('$quipu_no_memory') :-
    (   current_module('$quipu_no_memory')
    ->  true
    ;   set_module('$quipu_no_memory':base(system)),
        set_module('$quipu_no_memory':class(user))
    ).


                 /*******************************
                 *            PARSING           *
                 *******************************/

%   ql_parse(+Text, +M, -Term, -Names): exactly one term (R-P1); a missing final '.' is
%   supplied. Throws error(syntax_error(Id), _) or ql(empty).
ql_parse(Text, M, Term, Names) :-
    Options = [variable_names(Names), module(M), syntax_errors(error)],
    string_concat(Text, "\n.", Closed),
    split_string(Text, "", " \t\r\n", [Trimmed]),
    % Journal and snapshot clauses come without the '.', so try the likelier form first.
    (   string_concat(_, ".", Trimmed)
    ->  (   catch(ql_read_one(Text, Options, Term0), error(syntax_error(_), _), fail)
        ->  Term = Term0
        ;   ql_read_one(Closed, Options, Term)
        )
    ;   catch(ql_read_one(Closed, Options, Term0), E, true)
    ->  (   var(E)
        ->  Term = Term0
        ;   catch(ql_read_one(Text, Options, Term), _, throw(E))
        )
    ).

ql_read_one(Text, Options, Term) :-
    setup_call_cleanup(
        open_string(Text, S),
        ( read_term(S, Term0, Options),
          read_term(S, Rest, [syntax_errors(error)])
        ),
        close(S)),
    (   Term0 == end_of_file
    ->  throw(ql(empty))
    ;   Rest \== end_of_file
    ->  throw(error(syntax_error(more_than_one_term), _))
    ;   Term = Term0
    ).

%   ql_error_text(+Error, -Text): a short message for an error term (§10.3 texts stay inside).
ql_error_text(error(syntax_error(Id), _), Text) :-
    !,
    (   atom(Id)
    ->  atomic_list_concat(Words, '_', Id),
        atomic_list_concat(Words, ' ', Spaced),
        format(string(Text), "syntax error: ~w", [Spaced])
    ;   format(string(Text), "syntax error: ~q", [Id])
    ).
ql_error_text(ql(empty), "empty text") :- !.
ql_error_text(ql(Why), Text) :- !, format(string(Text), "~w", [Why]).
ql_error_text(E, Text) :-
    (   catch(message_to_codes(E, _, Codes), _, fail)
    ->  string_codes(Text, Codes)
    ;   format(string(Text), "~q", [E])
    ).


                 /*******************************
                 *           RENDERING          *
                 *******************************/

%   ql_render(+Term, +Names, -Text): canonical rendering (R-R1..R-R4). Named variables keep
%   their names; others get A, B, ... in order of first appearance, skipping used names.
ql_render(Term, Names, Text) :-
    ql_name_all(Term, Names, AllNames),
    ql_render_named(Term, AllNames, Text).

ql_render_named(Term, Names, Text) :-
    (   nonvar(Term), Term = (H :- B), B \== true
    ->  ql_write(H, Names, HT),
        ql_write(B, Names, BT),
        format(string(Text), "~w :- ~w", [HT, BT])
    ;   nonvar(Term), Term = (H :- true)
    ->  ql_write(H, Names, Text)
    ;   ql_write(Term, Names, Text)
    ).

ql_write(T, Names, Text) :-
    format(string(Text), "~W",
           [T, [quoted(true), spacing(next_argument), variable_names(Names), portray(false),
                module(quipu_render)]]).

ql_name_all(Term, Names, All) :-
    term_variables(Term, Vars),
    findall(N, member(N=_, Names), Used),
    ql_fresh(Vars, Names, Used, 0, Extra),
    append(Names, Extra, All).

ql_fresh([], _, _, _, []).
ql_fresh([V|Vs], Names, Used, I, Extra) :-
    (   member(_=W, Names), W == V
    ->  ql_fresh(Vs, Names, Used, I, Extra)
    ;   ql_fresh_name(I, Used, Name, I1),
        Extra = [Name=V|Extra1],
        ql_fresh(Vs, Names, [Name|Used], I1, Extra1)
    ).

ql_fresh_name(I, Used, Name, I1) :-
    L is 0'A + I mod 26,
    K is I // 26,
    (   K =:= 0
    ->  atom_codes(Name0, [L])
    ;   format(atom(Name0), "~c~d", [L, K])
    ),
    I2 is I + 1,
    (   memberchk(Name0, Used)
    ->  ql_fresh_name(I2, Used, Name, I1)
    ;   Name = Name0,
        I1 = I2
    ).

%   ql_render_text(+Text, -Out): parse and render (for tools that echo canonical forms).
ql_render_text(Text, Out) :-
    ql_guard(( ql_parse(Text, quipu_logic, T, Names),
               ql_render(T, Names, R)
             ), ok(R), Out).


                 /*******************************
                 *     STORING AND REMOVING     *
                 *******************************/

%   ql_clause_parts(+Term, -Head, -Body): a storable clause, or throw ql(Why).
ql_clause_parts(Term, _, _) :-
    var(Term), !,
    throw(ql("a variable is not a clause")).
ql_clause_parts((H :- B), H, B) :- !,
    ql_check_head(H),
    (   var(B)
    ->  throw(ql("the body is a variable"))
    ;   true
    ).
ql_clause_parts((:- _), _, _) :- !,
    throw(ql("a directive is not a clause")).
ql_clause_parts(H, H, true) :-
    ql_check_head(H).

ql_check_head(H) :-
    (   var(H)
    ->  throw(ql("the head is a variable"))
    ;   \+ callable(H)
    ->  throw(ql("the head is not an atom or compound"))
    ;   H = _:_
    ->  throw(ql("the head must not be module-qualified"))
    ;   functor(H, N, A),
        ql_graph_predicate(N/A)
    ->  format(string(Msg), "~q reads quipu's knowledge graph and is read-only here: write facts to the graph through quipu (knot, set)", [N/A]),
        throw(ql(Msg))
    ;   functor(H, N, A),
        \+ ql_iso_directive(N/A),
        (   predicate_property(system:H, iso)
        ;   ql_control(N/A)
        )
    ->  functor(H, N, A),
        format(string(Msg), "cannot redefine built-in ~q", [N/A]),
        throw(ql(Msg))
    ;   true
    ).

%   ql_local(+M, +H): H's predicate is M's own, even where the engine has a system predicate
%   of that name (volatile/1, table/1, format/2 ...): agents choose their own predicate names,
%   and only ISO built-ins and control constructs are refused (ql_check_head). The system
%   predicate stays what every other memory and the engine itself see.
ql_local(M, H) :-
    (   ql_memory_predicate(M, H)
    ->  true
    ;   predicate_property(system:H, built_in)
    ->  functor(H, N, A),
        functor(G, N, A),
        (   catch(redefine_system_predicate(M:G), _, fail)
        ->  dynamic(M:N/A)
        ;   format(string(Msg), "cannot redefine built-in ~q", [N/A]),
            throw(ql(Msg))
        )
    ;   true
    ).

%   ql_clause(+M, ?H, ?B, -Ref): clause/3 over M's own predicates only. A name M has not
%   defined may be a system predicate, whose clauses cannot be read: it has none here.
ql_clause(M, H, B, Ref) :-
    ql_memory_predicate(M, H),
    clause(M:H, B, Ref).

%   ISO directives that are no ISO built-in predicate: SWI-Prolog marks them iso, but as a
%   user's predicate name (dynamic(d1)) they collide with nothing a query needs.
%   The knowledge graph's predicates (prolog/graph.pl): no memory may define or assert them.
ql_graph_predicate(rdf/3).
ql_graph_predicate(rdf/4).
ql_graph_predicate(rdf_at/4).
ql_graph_predicate(rdf_tx/4).

ql_iso_directive((dynamic)/1).
ql_iso_directive((discontiguous)/1).
ql_iso_directive((multifile)/1).
ql_iso_directive((initialization)/1).
ql_iso_directive(include/1).
ql_iso_directive(ensure_loaded/1).

ql_control((',')/2).
ql_control((;)/2).
ql_control((->)/2).
ql_control((*->)/2).
ql_control((\+)/1).
ql_control((:-)/1).
ql_control((:-)/2).
ql_control((:)/2).
ql_control(call/_).
ql_control((!)/0).

%   ql_store(+M, +Term, +Names): assertz into M, remembering the author's names.
ql_store(M, Term, Names) :-
    ql_clause_parts(Term, H, B),
    ql_local(M, H),
    assertz(M:(H :- B), Ref),
    (   Names == []
    ->  true
    ;   assertz(ql_names(Ref, (H :- B), Names))
    ),
    (   B == true
    ->  true
    ;   functor(H, N, A),
        assertz(ql_rule(M, N, A, Ref))
    ).

ql_assertz(M, Text, Result) :-
    ql_guard(( ql_parse(Text, M, T, Names),
               ql_store(M, T, Names)
             ), ok, Result).

%   ql_erase(+Ref): remove one clause and its name record.
ql_erase(Ref) :-
    erase(Ref),
    retractall(ql_names(Ref, _, _)),
    retractall(ql_rule(_, _, _, Ref)).

%   ql_retract_first_fact(+M, +Text, -Result): the first fact (body true) unifying with the
%   text goes, exactly one copy (R-FF1). Result: ok(true) or ok(false).
ql_retract_first_fact(M, Text, Result) :-
    ql_guard(( ql_parse(Text, M, T, _),
               ql_check_head(T),
               (   ql_clause(M, T, true, Ref)
               ->  ql_erase(Ref),
                   Found = true
               ;   Found = false
               )
             ), ok(Found), Result).

%   ql_retractall(+M, +Text, -Result): every clause (fact or rule) whose head unifies
%   (R-CC1). Result: ok(Count).
ql_retractall(M, Text, Result) :-
    ql_guard(( ql_parse(Text, M, T, _),
               ql_check_head(T),
               ql_erase_matching(M, T, N)
             ), ok(N), Result).

ql_erase_matching(M, Head, N) :-
    (   predicate_property(M:Head, dynamic)
    ->  findall(Ref, clause(M:Head, _, Ref), Refs),
        maplist(ql_erase, Refs),
        length(Refs, N)
    ;   N = 0
    ).

%   ql_load(+M, +Texts, -Result): the batched load (snapshots, seed files, replay). Each text
%   is one clause or a dynamic/discontiguous/module directive (R-B6). Result:
%   ok(Loaded, Failures) with Failures a list of f(Index, Message), Index 0-based.
ql_load(M, Texts, ok(Loaded, Failures)) :-
    ql_load(Texts, M, 0, 0, Loaded, Failures).

ql_load([], _, _, L, L, []).
ql_load([Text|Texts], M, I, L0, L, Failures) :-
    (   catch(ql_load_one(M, Text), E, true)
    ->  true
    ;   E = ql("could not be loaded")
    ),
    I1 is I + 1,
    (   var(E)
    ->  L1 is L0 + 1,
        Failures = Failures1
    ;   ql_error_text(E, Msg),
        L1 = L0,
        Failures = [f(I, Msg)|Failures1]
    ),
    ql_load(Texts, M, I1, L1, L, Failures1).

ql_load_one(M, Text) :-
    ql_parse(Text, M, T, Names),
    (   nonvar(T), T = (:- D)
    ->  ql_directive(M, D)
    ;   ql_store(M, T, Names)
    ).

ql_directive(_, D) :- var(D), !, throw(ql("a variable is not a directive")).
ql_directive(M, dynamic(Spec)) :- !, ql_declare_dynamic(M, Spec).
ql_directive(_, discontiguous(_)) :- !.
ql_directive(_, module(_, _)) :- !.
ql_directive(_, D) :-
    ql_render(D, [], Text),
    format(string(Msg), "directive not executed: ~w", [Text]),
    throw(ql(Msg)).

ql_declare_dynamic(M, Spec) :-
    (   var(Spec)
    ->  throw(ql("dynamic/1 needs a predicate indicator"))
    ;   Spec = (A, B)
    ->  ql_declare_dynamic(M, A), ql_declare_dynamic(M, B)
    ;   is_list(Spec)
    ->  forall(member(S, Spec), ql_declare_dynamic(M, S))
    ;   Spec = N/A, atom(N), integer(A), A >= 0
    ->  functor(H, N, A),
        ql_check_head(H),
        ql_local(M, H),
        dynamic(M:N/A)
    ;   throw(ql("dynamic/1 needs a predicate indicator"))
    ).


                 /*******************************
                 *      LISTING THE KB          *
                 *******************************/

%   ql_user_predicate(+M, -Head): a dynamic predicate defined in M itself (not imported).
ql_user_predicate(M, Head) :-
    current_predicate(M:N/A),
    functor(Head, N, A),
    predicate_property(M:Head, dynamic),
    \+ predicate_property(M:Head, imported_from(_)).

%   ql_clauses(+M, -Result): ok(Preds), Preds = [p(Name, Arity, [Text, ...]), ...] sorted by
%   name then arity (R-I3), clauses in database order, rendered with author names.
ql_clauses(M, ok(Preds)) :-
    findall(N/A, ( ql_user_predicate(M, H), functor(H, N, A) ), PIs0),
    msort(PIs0, PIs),
    findall(p(NS, A, Texts),
            ( member(N/A, PIs),
              atom_string(N, NS),
              functor(H, N, A),
              findall(Text, ( clause(M:H, B, Ref), ql_clause_text(Ref, H, B, Text) ), Texts)
            ),
            Preds).

ql_clause_text(Ref, H, B, Text) :-
    (   ql_names(Ref, Stored, Names)
    ->  ql_render(Stored, Names, Text)
    ;   ql_render((H :- B), [], Text)
    ).


                 /*******************************
                 *            QUERIES           *
                 *******************************/

%   ql_query(+M, +Text, +Max, -Result): run an untrusted goal in memory M (R-Q1..R-Q9).
%   Result: ok(Names, Rows) | refused(Why) | syntax(Msg) | limit(stack) | limit(time).
%   Runtime errors other than limits give no solutions (R-Q5).
ql_query(M, Text, Max, Result) :-
    (   catch(ql_query_(M, Text, Max, Result0), E, ql_query_error(E, Result0))
    ->  Result = Result0
    ;   Result = error(prolog, "the query helper failed")
    ).

ql_query_(M, Text, Max, Result) :-
    ql_parse(Text, M, Goal, Names0),
    ql_memories(Mounted),
    ql_safe_goal(Goal, M, Mounted),
    ql_unmounted_fails(Goal, M, Mounted, Run),
    exclude(ql_hidden_name, Names0, Names),
    maplist(ql_name_value, Names, Vars),
    findall(KeyName, member(KeyName=_, Names), Keys0),
    maplist(atom_string, Keys0, Keys),
    Template = Vars,
    ql_silently(ql_solutions(M:Run, Template, Max, Sols)),
    maplist(ql_encode_row, Sols, Rows),
    Result = ok(Keys, Rows).

ql_name_value(_=Value, Value).

ql_hidden_name(Name=_) :-
    sub_atom(Name, 0, 1, _, '_').

ql_solutions(Goal, Template, Max, Sols) :-
    catch(findall(Template, limit(Max, Goal), Sols), E, ql_runtime_error(E, Sols)).

ql_runtime_error(E, []) :-
    ( ql_limit_error(E, _) ; E = quipu_graph_error(_) ), !,
    throw(E).
ql_runtime_error(_, []).

ql_limit_error(time_limit_exceeded, time).
ql_limit_error(error(resource_error(_), _), stack).
ql_limit_error(resource_error(_), stack).

ql_query_error(E, Result) :-
    (   ql_limit_error(E, Kind)
    ->  Result = limit(Kind)
    ;   E = ql_refused(Why)
    ->  Result = refused(Why)
    ;   E = quipu_graph_error(Why)       % the graph could not answer: said, never no solutions
    ->  Result = graph(Why)
    ;   E = error(syntax_error(_), _)
    ->  ql_error_text(E, Msg),
        Result = syntax(Msg)
    ;   E = ql(empty)
    ->  Result = syntax("empty goal")
    ;   Result = ok([], [])
    ).

%   ql_silently(:Goal): run Goal (once) with current output on a null stream (R-Q9).
ql_silently(Goal) :-
    current_output(Old),
    setup_call_cleanup(
        ( open_null_stream(Null), set_output(Null) ),
        once(Goal),
        ( set_output(Old), close(Null) )).

ql_encode_row(Values, Row) :-
    copy_term(Values, Copy),
    term_variables(Copy, Vars),
    ql_bind_fresh(Vars, 1),
    maplist(ql_encode, Copy, Row).

ql_bind_fresh([], _).
ql_bind_fresh([V|Vs], I) :-
    format(string(S), "_G~d", [I]),
    V = '$ql_var'(S),
    I1 is I + 1,
    ql_bind_fresh(Vs, I1).

ql_encode(V, v(S)) :- V = '$ql_var'(S), string(S), !.
ql_encode(V, E) :- integer(V), !,
    (   V >= -(1<<62), V < (1<<62)
    ->  E = V
    ;   number_string(V, S), E = i(S)          % the MQI would send a big integer as text
    ).
ql_encode(V, E) :- float(V), !,
    (   V =:= V, V =\= inf, V =\= -inf
    ->  E = V
    ;   format(string(S), "~w", [V]), E = x(S)
    ).
ql_encode(V, l(Items)) :- is_list(V), !, maplist(ql_encode, V, Items).
ql_encode(V, a(S)) :- atom(V), !, atom_string(V, S).
ql_encode(V, s(V)) :- string(V), !.
ql_encode(V, c(NS, Args)) :- compound(V), !,
    compound_name_arguments(V, N, As),
    atom_string(N, NS),
    maplist(ql_encode, As, Args).
ql_encode(V, o(S)) :- format(string(S), "~q", [V]).

%   ql_guard(:Goal, +Success, -Result): Result = Success, or error(Kind, Message).
ql_guard(Goal, Success, Result) :-
    catch(( once(Goal) -> Result = Success ; Result = error(failed, "failed") ),
          E,
          ql_guard_error(E, Result)).

ql_guard_error(E, limit(Kind)) :- ql_limit_error(E, Kind), !.
ql_guard_error(E, error(Kind, Msg)) :-
    (   E = error(syntax_error(_), _)
    ->  Kind = syntax
    ;   E = ql(empty)
    ->  Kind = syntax
    ;   E = ql(_)
    ->  Kind = rejected
    ;   Kind = prolog
    ),
    ql_error_text(E, Msg).


                 /*******************************
                 *      UNTRUSTED GOALS (R-Q4)  *
                 *******************************/

%   ql_safe_goal(+Goal, +M, +Mounted): throw ql_refused(Why) unless Goal, and every clause
%   body of the memory predicates it can reach, only calls allowed predicates. The check
%   works on the parsed term: meta-arguments are followed through the predicates' own
%   meta_predicate declarations; a goal position holding an unbound variable is refused
%   (it could become anything at run time).
ql_safe_goal(Goal, M, Mounted) :-
    (   ql_safe(Goal, M, top, Mounted, [], _)
    ->  true
    ;   ql_refuse("the goal could not be checked", [])
    ).

%   ql_unmounted_fails(+Goal, +M, +Mounted, -Run): Goal with every goal position Q:G whose Q is
%   not a mounted memory replaced by fail, so that it has no solutions (R-M2) and G never
%   runs: calling it would make module Q, and a builtin G would still succeed. For a goal
%   ql_safe_goal accepted (every other qualifier is refused); it follows the goal positions
%   that check follows: control constructs and the meta-arguments of library predicates.
ql_unmounted_fails(Goal, M, Mounted, Run) :-
    (   sub_term(T, Goal), nonvar(T), T = _:_
    ->  ql_unmounted_goal(Goal, M, Mounted, Run)
    ;   Run = Goal                      % the common case: nothing qualified
    ).

ql_unmounted_goal(G, _, _, G) :-
    var(G), !.
ql_unmounted_goal(Q:G, _, Mounted, Run) :- !,
    (   memberchk(Q, Mounted)
    ->  Run = Q:Run0,
        ql_unmounted_goal(G, Q, Mounted, Run0)
    ;   Run = fail
    ).
ql_unmounted_goal(G, M, Mounted, Run) :-
    callable(G),
    \+ ql_memory_predicate(M, G),
    predicate_property(M:G, implementation_module(IM)),
    IM \== M,
    !,
    G =.. [F|Args],
    (   IM == yall, Args = [Left, Right|Extra]
    ->  length(Extra, NExtra),
        (   F == (>>)
        ->  ( is_list(Left) -> length(Left, NP) ; NP = 0 ),
            N is max(0, NExtra - NP)
        ;   N = NExtra
        ),
        ql_unmounted_closure(Right, N, M, Mounted, Right1),
        Run =.. [F, Left, Right1|Extra]
    ;   predicate_property(M:G, meta_predicate(Spec))
    ->  Spec =.. [_|Specs],
        maplist(ql_unmounted_arg(M, Mounted), Specs, Args, Args1),
        Run =.. [F|Args1]
    ;   Run = G
    ).
ql_unmounted_goal(G, _, _, G).

ql_unmounted_arg(M, Mounted, Spec, Arg, Run) :-
    (   integer(Spec)
    ->  ql_unmounted_closure(Arg, Spec, M, Mounted, Run)
    ;   Spec == (^)
    ->  ql_unmounted_carets(Arg, M, Mounted, Run)
    ;   Run = Arg
    ).

ql_unmounted_carets(G, _, _, G) :-
    var(G), !.
ql_unmounted_carets(V^G, M, Mounted, V^Run) :- !,
    ql_unmounted_carets(G, M, Mounted, Run).
ql_unmounted_carets(G, M, Mounted, Run) :-
    ql_unmounted_goal(G, M, Mounted, Run).

%   A closure called with N more arguments: an unmounted one becomes a lambda that fails.
ql_unmounted_closure(C, _, _, _, C) :-
    var(C), !.
ql_unmounted_closure(Q:C, N, _, Mounted, Run) :- !,
    (   memberchk(Q, Mounted)
    ->  Run = Q:Run0,
        ql_unmounted_closure(C, N, Q, Mounted, Run0)
    ;   N =:= 0
    ->  Run = fail
    ;   length(Params, N),
        Run = (Params>>fail)
    ).
ql_unmounted_closure(C, N, M, Mounted, Run) :-
    (   callable(C)
    ->  length(Extra, N),
        C =.. L0,
        append(L0, Extra, L),
        G =.. L,
        ql_unmounted_goal(G, M, Mounted, Run0),
        Run0 =.. L1,
        append(L2, Extra1, L1),
        length(Extra1, N),
        Run =.. L2
    ;   Run = C
    ).

ql_refuse(Fmt, Args) :-
    format(string(Why), Fmt, Args),
    throw(ql_refused(Why)).

ql_safe(G, _, _, _, _, _) :-
    var(G), !,
    ql_refuse("a goal position holds an unbound variable", []).
ql_safe(Q:G, _, Where, Mounted, V0, V) :- !,
    ql_safe_qualifier(Q, Where, Mounted),
    (   memberchk(Q, Mounted)
    ->  ql_safe(G, Q, Where, Mounted, V0, V)
    ;   ql_no_memory(None),             % an unmounted memory: no solutions (R-M2); what the
        ql_safe(G, None, Where, Mounted, V0, V)  % goal would call is refused all the same
    ).
ql_safe(G, _, _, _, V, V) :-
    \+ callable(G), !.                  % a type error at run time, caught there
ql_safe(G, _, _, _, _, _) :-
    is_list(G), !,
    ql_refuse("a list as a goal loads files", []).
ql_safe(G, M, Where, Mounted, V0, V) :-
    functor(G, N, A),
    (   ql_memory_predicate(M, G)       % the memory's own clauses (set_point/1, open/1, ...);
    ->  ql_safe_user(G, M, Mounted, V0, V)  % system predicates can never be one
    ;   ql_denied(N, A)
    ->  ql_refuse("~q is not allowed in a query", [N/A])
    ;   predicate_property(M:G, implementation_module(IM)),
        IM \== M
    ->  ql_safe_library(IM, G, M, Where, Mounted, V0, V)
    ;   V = V0                          % undefined: an existence error, caught at run time
    ).

ql_safe_qualifier(Q, _, _) :-
    var(Q), !,
    ql_refuse("a module qualifier is an unbound variable", []).
ql_safe_qualifier(Q, _, _) :-
    \+ atom(Q), !,
    ql_refuse("a module qualifier must be a memory name", []).
ql_safe_qualifier(Q, _, Mounted) :-
    memberchk(Q, Mounted), !.
ql_safe_qualifier(Q, module, _) :- !,   % a module-sensitive argument, not a goal
    ql_refuse("~q is not a mounted memory", [Q]).
ql_safe_qualifier(Q, _, _) :-           % a goal: any name but an engine or library module's
    (   ql_reserved_name(Q)
    ->  ql_refuse("~q is not a memory", [Q])
    ;   true
    ).

ql_memory_predicate(M, G) :-
    functor(G, N, A),
    current_predicate(M:N/A),           % first: predicate_property on a name M has not defined
    predicate_property(M:G, dynamic),   % would autoload a library predicate of that name
    \+ predicate_property(M:G, imported_from(_)).  % (quintus:mode/1) into M, for good

ql_safe_user(G, M, Mounted, V0, V) :-
    functor(G, N, A),
    (   memberchk(M:N/A, V0)
    ->  V = V0
    ;   findall(B, ( ql_rule(M, N, A, Ref), clause(_, B, Ref) ), Bodies),
        foldl(ql_safe_body(M, Mounted), Bodies, [M:N/A|V0], V)
    ).

ql_safe_body(M, Mounted, B, V0, V) :-
    ql_safe(B, M, rule, Mounted, V0, V).

ql_safe_library(IM, G, M, Where, Mounted, V0, V) :-
    (   ( IM == system ; sub_atom(IM, 0, _, _, '$') )   % '$bags', '$syspreds': system internals
    ->  true
    ;   ql_allowed_library(IM)
    ->  true
    ;   functor(G, N, A),
        ql_refuse("~q from library ~q is not allowed in a query", [N/A, IM])
    ),
    (   IM == yall
    ->  ql_safe_lambda(G, M, Where, Mounted, V0, V)
    ;   ql_format_goal(G)
    ->  V = V0
    ;   predicate_property(M:G, meta_predicate(Spec))
    ->  G =.. [_|Args],
        Spec =.. [_|Specs],
        foldl(ql_safe_arg(M, Where, Mounted), Specs, Args, V0, V)
    ;   V = V0
    ).

%   format/1,2,3: ~@ calls a goal, so a format that is not plain text or contains ~@ is refused.
ql_format_goal(G) :-
    functor(G, format, A),
    between(1, 3, A),
    ( A == 3 -> arg(2, G, F) ; arg(1, G, F) ),
    (   ( var(F) ; \+ ( atom(F) ; string(F) ; is_list(F) ) )
    ->  ql_refuse("format/~d needs a literal format", [A])
    ;   text_to_string(F, S),
        sub_string(S, _, _, _, "~@")
    ->  ql_refuse("format/~d with ~~@ runs a goal", [A])
    ;   true
    ).

ql_safe_arg(M, Where, Mounted, Spec, Arg, V0, V) :-
    (   integer(Spec)
    ->  ql_safe_closure(Arg, Spec, M, Where, Mounted, V0, V)
    ;   Spec == (^)
    ->  ql_strip_carets(Arg, G),
        ql_safe(G, M, Where, Mounted, V0, V)
    ;   Spec == (//)
    ->  ql_safe_dcg(Arg, M, Where, Mounted, V0, V)
    ;   Spec == (:), nonvar(Arg), Arg = Q:_
    ->  ql_safe_qualifier(Q, module, Mounted),
        V = V0
    ;   V = V0
    ).

ql_strip_carets(G, G) :- var(G), !.
ql_strip_carets(_^G0, G) :- !, ql_strip_carets(G0, G).
ql_strip_carets(G, G).

ql_safe_closure(C, _, _, _, _, _, _) :-
    var(C), !,
    ql_refuse("a goal position holds an unbound variable", []).
ql_safe_closure(Q:C, N, _, Where, Mounted, V0, V) :- !,
    ql_safe_qualifier(Q, Where, Mounted),
    (   memberchk(Q, Mounted)
    ->  ql_safe_closure(C, N, Q, Where, Mounted, V0, V)
    ;   ql_no_memory(None),
        ql_safe_closure(C, N, None, Where, Mounted, V0, V)
    ).
ql_safe_closure(C, N, M, Where, Mounted, V0, V) :-
    (   callable(C)
    ->  length(Extra, N),
        C =.. L0,
        append(L0, Extra, L),
        G =.. L,
        ql_safe(G, M, Where, Mounted, V0, V)
    ;   V = V0
    ).

%   yall lambdas: Params>>Body and Free/Lambda; the body gets the arguments that the
%   parameters do not take.
ql_safe_lambda(G, M, Where, Mounted, V0, V) :-
    G =.. [F, Left, Right|Extra],
    length(Extra, NExtra),
    (   F == (>>)
    ->  ( is_list(Left) -> length(Left, NP) ; NP = 0 ),
        N is max(0, NExtra - NP),
        ql_safe_closure(Right, N, M, Where, Mounted, V0, V)
    ;   F == (/)
    ->  ql_safe_closure(Right, NExtra, M, Where, Mounted, V0, V)
    ;   ql_refuse("unknown lambda form", [])
    ).
ql_safe_lambda(_, _, _, _, _, _) :-
    ql_refuse("unknown lambda form", []).

ql_safe_dcg(B, _, _, _, _, _) :-
    var(B), !,
    ql_refuse("a grammar body holds an unbound variable", []).
ql_safe_dcg(Q:B, _, Where, Mounted, V0, V) :- !,
    ql_safe_qualifier(Q, Where, Mounted),
    ql_safe_dcg(B, Q, Where, Mounted, V0, V).
ql_safe_dcg((A, B), M, W, Ms, V0, V) :- !,
    ql_safe_dcg(A, M, W, Ms, V0, V1), ql_safe_dcg(B, M, W, Ms, V1, V).
ql_safe_dcg((A ; B), M, W, Ms, V0, V) :- !,
    ql_safe_dcg(A, M, W, Ms, V0, V1), ql_safe_dcg(B, M, W, Ms, V1, V).
ql_safe_dcg((A | B), M, W, Ms, V0, V) :- !,
    ql_safe_dcg(A, M, W, Ms, V0, V1), ql_safe_dcg(B, M, W, Ms, V1, V).
ql_safe_dcg((A -> B), M, W, Ms, V0, V) :- !,
    ql_safe_dcg(A, M, W, Ms, V0, V1), ql_safe_dcg(B, M, W, Ms, V1, V).
ql_safe_dcg(\+ A, M, W, Ms, V0, V) :- !,
    ql_safe_dcg(A, M, W, Ms, V0, V).
ql_safe_dcg({}(G), M, W, Ms, V0, V) :- !,
    ql_safe(G, M, W, Ms, V0, V).
ql_safe_dcg(!, _, _, _, V, V) :- !.
ql_safe_dcg([], _, _, _, V, V) :- !.
ql_safe_dcg(L, _, _, _, V, V) :- is_list(L), !.
ql_safe_dcg(S, _, _, _, V, V) :- string(S), !.
ql_safe_dcg(call(C), M, W, Ms, V0, V) :- !,
    ql_safe_closure(C, 2, M, W, Ms, V0, V).
ql_safe_dcg(NT, M, W, Ms, V0, V) :-
    ql_safe_closure(NT, 2, M, W, Ms, V0, V).

%   Libraries whose predicates neither touch files, processes, the network nor the database.
ql_allowed_library(lists).
ql_allowed_library(apply).
ql_allowed_library(apply_macros).
ql_allowed_library(aggregate).
ql_allowed_library(pairs).
ql_allowed_library(yall).
ql_allowed_library(ordsets).
ql_allowed_library(assoc).
ql_allowed_library(rbtrees).
ql_allowed_library(solution_sequences).
ql_allowed_library(error).
ql_allowed_library(option).
ql_allowed_library(ugraphs).
ql_allowed_library(occurs).
ql_allowed_library(terms).
ql_allowed_library(strings).
ql_allowed_library(dicts).
ql_allowed_library(sort).
ql_allowed_library(random).
ql_allowed_library(nb_set).
ql_allowed_library(heaps).
ql_allowed_library(when).
ql_allowed_library(dif).
ql_allowed_library(arith).
ql_allowed_library(arithmetic).
ql_allowed_library(ctypes).
ql_allowed_library(dcg_basics).
ql_allowed_library(clpfd).
ql_allowed_library(listing).
ql_allowed_library(quipu_graph).        % rdf/3 ...: reads the knowledge graph, never writes

%   ql_denied(+Name, +Arity): system predicates that exit, run processes, touch files or
%   streams, load code, change flags or operators, or change a database (R-Q4).
ql_denied(N, _) :- sub_atom(N, 0, _, _, '$'), !.
ql_denied(N, _) :-
    ql_denied_prefix(P),
    sub_atom(N, 0, _, _, P), !.
ql_denied(N, A) :- ql_denied_pi(N, A0), ( A0 == A ; A0 == any ), !.

ql_denied_prefix(thread_).
ql_denied_prefix(mutex_).
ql_denied_prefix(message_queue_).
ql_denied_prefix(tcp_).
ql_denied_prefix(udp_).
ql_denied_prefix(socket_).
ql_denied_prefix(process_).
ql_denied_prefix(prolog_).
ql_denied_prefix(set_).
ql_denied_prefix(tty_).
ql_denied_prefix(win_).
ql_denied_prefix(http_).

% exit and interaction
ql_denied_pi(halt, any).
ql_denied_pi(abort, 0).
ql_denied_pi(break, 0).
ql_denied_pi(prolog, 0).
ql_denied_pi(trace, any).
ql_denied_pi(notrace, any).
ql_denied_pi(spy, 1).
ql_denied_pi(nospy, 1).
ql_denied_pi(nospyall, 0).
ql_denied_pi(debug, 0).
ql_denied_pi(debug, 1).
ql_denied_pi(nodebug, any).
ql_denied_pi(leash, 1).
ql_denied_pi(visible, 1).
ql_denied_pi(gtrace, any).
ql_denied_pi(gspy, 1).
ql_denied_pi(guitracer, 0).
ql_denied_pi(edit, any).
ql_denied_pi(alarm, any).
ql_denied_pi(remove_alarm, 1).
ql_denied_pi(at_halt, 1).
ql_denied_pi(cancel_halt, 1).
ql_denied_pi(initialization, any).
% processes and environment
ql_denied_pi(shell, any).
ql_denied_pi(setenv, 2).
ql_denied_pi(unsetenv, 1).
% files and streams
ql_denied_pi(open, any).
ql_denied_pi(see, 1).
ql_denied_pi(seen, 0).
ql_denied_pi(tell, 1).
ql_denied_pi(told, 0).
ql_denied_pi(append, 1).
ql_denied_pi(close, any).
ql_denied_pi(stream_property, 2).
ql_denied_pi(current_stream, 3).
ql_denied_pi(seek, 4).
ql_denied_pi(protocol, 1).
ql_denied_pi(protocola, 1).
ql_denied_pi(noprotocol, 0).
ql_denied_pi(tmp_file_stream, 3).
ql_denied_pi(delete_file, 1).
ql_denied_pi(rename_file, 2).
ql_denied_pi(make_directory, 1).
ql_denied_pi(delete_directory, 1).
ql_denied_pi(working_directory, 2).
ql_denied_pi(chdir, 1).
ql_denied_pi(directory_files, 2).
ql_denied_pi(read_link, 3).
ql_denied_pi(size_file, 2).
ql_denied_pi(exists_file, 1).
ql_denied_pi(exists_directory, 1).
ql_denied_pi(access_file, 2).
ql_denied_pi(time_file, 2).
ql_denied_pi(same_file, 2).
ql_denied_pi(expand_file_name, 2).
% loading code
ql_denied_pi(consult, 1).
ql_denied_pi(ensure_loaded, 1).
ql_denied_pi(use_module, any).
ql_denied_pi(load_files, any).
ql_denied_pi(make, 0).
ql_denied_pi(reexport, any).
ql_denied_pi(autoload, any).
ql_denied_pi(autoload_path, 1).
ql_denied_pi(include, 1).
ql_denied_pi(use_foreign_library, any).
ql_denied_pi(load_foreign_library, any).
ql_denied_pi(open_shared_object, any).
ql_denied_pi(qcompile, any).
ql_denied_pi(compile_predicates, 1).
ql_denied_pi(qsave_program, any).
% flags, operators, modules
ql_denied_pi(create_prolog_flag, 3).
ql_denied_pi(op, 3).
ql_denied_pi(style_check, 1).
ql_denied_pi(add_import_module, 3).
ql_denied_pi(delete_import_module, 2).
ql_denied_pi(import, 1).
ql_denied_pi(export, 1).
ql_denied_pi(module, any).
ql_denied_pi(expects_dialect, 1).
ql_denied_pi(unknown, 2).
ql_denied_pi(char_conversion, 2).
ql_denied_pi(prompt, 2).
ql_denied_pi(setlocale, 3).
ql_denied_pi(license, any).
ql_denied_pi(redefine_system_predicate, 1).
% the database and global state
ql_denied_pi(assert, any).
ql_denied_pi(asserta, any).
ql_denied_pi(assertz, any).
ql_denied_pi(retract, any).
ql_denied_pi(retractall, any).
ql_denied_pi(abolish, any).
ql_denied_pi(erase, 1).
ql_denied_pi(dynamic, any).
ql_denied_pi(discontiguous, any).
ql_denied_pi(multifile, any).
ql_denied_pi(thread_local, any).
ql_denied_pi(volatile, any).
ql_denied_pi(public, any).
ql_denied_pi(table, any).
ql_denied_pi(untable, any).
ql_denied_pi(abolish_all_tables, 0).
ql_denied_pi(abolish_table_subgoals, 1).
ql_denied_pi(recorda, any).
ql_denied_pi(recordz, any).
ql_denied_pi(flag, 3).
ql_denied_pi(nb_setval, 2).
ql_denied_pi(b_setval, 2).
ql_denied_pi(gensym, 2).
ql_denied_pi(reset_gensym, any).
ql_denied_pi(apply, 2).
ql_denied_pi(print_message, 2).
ql_denied_pi(print_message_lines, 3).
ql_denied_pi(message_to_codes, 3).
ql_denied_pi(garbage_collect_clauses, 0).
