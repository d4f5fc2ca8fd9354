"""The owl extra: stored OWL ontologies, their materialisation into ROOT's companion graph, the
OWL write gate and ``quipu_explain`` (tools-graphs-governance §8, docs/owl.md)."""
