"""Shared machinery: operands, execution spaces, streams, options, lifetimes, caches, logging."""
