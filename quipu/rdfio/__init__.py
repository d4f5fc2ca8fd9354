"""RDF in and out: parsing documents into statements, serialising deterministic exports."""
