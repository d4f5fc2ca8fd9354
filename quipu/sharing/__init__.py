"""Portable knowledge between stores: shares, import, promotion, merge, alignment, acquisition."""
