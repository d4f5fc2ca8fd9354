"""SPARQL over temporal views."""
