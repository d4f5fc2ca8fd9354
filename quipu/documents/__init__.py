"""Whole RDF documents in and out of the store: ``knot`` parses, gates and asserts a document (or
replaces a producer's snapshot with it); ``export`` writes one scope as deterministic RDF.

Parsing and serialising themselves are ``quipu.rdfio``'s; this package is the write and read
service built on them and on ``quipu.store``.
"""
