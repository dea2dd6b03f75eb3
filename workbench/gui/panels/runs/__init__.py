"""The Runs tab: every run of the output folder, their curves overlaid and their configs diffed."""
