"""Reasoning: Datalog rules over the graph, evaluated in SQL (tools-core §3.11)."""
