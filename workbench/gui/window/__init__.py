"""The main window, its layout and menu, persisted settings, and following a run folder.
"""
