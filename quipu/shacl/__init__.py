"""SHACL shapes: the persistent registry, validation with structured results, and write gates."""
