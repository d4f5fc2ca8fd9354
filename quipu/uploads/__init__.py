"""Staged snapshot uploads (tools-core §3.2, §3.3): bounded, resumable parts, then one atomic
promotion through the knot writer. ``Uploads`` is the per-store service; see ``promote`` for
the promotion lifecycle and what happens across a restart."""
