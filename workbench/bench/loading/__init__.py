"""Benches of the input pipeline: the loader against a naive one, loader processes, the image
cache."""
