"""One router module per resource family; ``quipu.rest.app`` composes them."""
