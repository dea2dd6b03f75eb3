"""Searches that pick a setting before a run: the learning-rate range test."""
