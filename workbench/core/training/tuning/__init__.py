"""Measuring, searching and checking a run's settings before it starts: the speed probe, the
memory fit check, the learning-rate range test and the pre-flight check of what Start would
refuse."""
