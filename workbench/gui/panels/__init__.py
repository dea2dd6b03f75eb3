"""The window's panels: each edits or shows one part of a run (dataset, preview, settings,
device, controls, status, plots, log, results).
"""
