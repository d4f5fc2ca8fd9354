"""Episode domain tests: IRIs, hashes, statements, ingest and retraction over a real store."""
