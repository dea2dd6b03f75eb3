"""Measuring and searching a run's settings before it starts: the speed probe, the memory fit
check and the learning-rate range test."""
