"""Measuring a run's settings before it starts: the speed probe and the memory fit check."""
