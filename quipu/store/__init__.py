"""The bitemporal quad store: the only package that writes SQL for facts."""
