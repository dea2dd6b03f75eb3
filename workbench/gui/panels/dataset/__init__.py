"""The Dataset tab: the folder's classes and counts, and its health check."""
