"""Episodes: structured agent knowledge written with provenance (DM §9), and its retraction (DM §10)."""
