"""RDF in and out: parsing documents into statements, serialising terms and sorted documents,
CURIE and JSON-LD compaction. No store writes and no queries: those are ``quipu.documents``'s."""
