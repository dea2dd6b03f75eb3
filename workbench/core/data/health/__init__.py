"""The data health check: unreadable files, duplicates, train/val leakage, conflicting labels
and odd images of an image folder, found and explained before training.

``health_check.check_health`` runs it; ``findings`` holds what it reports; ``exclusion_list``
turns chosen findings into the list of files a run leaves out; ``split_groups`` keeps
duplicates on one side of the automatic split. The user's folder is only ever read: every file
the check writes lies in the cache folder (``facts_cache.health_folder``) or where the caller
says.
"""
