"""Named graphs as first-class citizens (tools-graphs-governance §1-§2): the registry and its
labels, datasets, overlays, and deep freeze. ``service.Graphs`` is the family's one object."""
