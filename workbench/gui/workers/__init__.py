"""Work off the UI thread: the training QThread worker, thread-pool jobs (latest request wins),
export, and keeping long-lived objects out of the garbage collector's sight.
"""
