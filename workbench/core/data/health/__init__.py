"""The data health check: unreadable files, duplicates, train/val leakage, conflicting labels
and odd images of an image folder, found and explained before training.

``health_check.check_health`` runs it; ``findings`` holds what it reports; ``exclusion_list``
turns chosen findings into the list of files a run leaves out. The automatic split keeps the
duplicate groups of the last check on one side: ``training_scan.scan_for_run`` loads them and
hands them to the scan (which may not import this package: it imports the scan). The user's
folder is only ever read: every file the check writes lies in the cache folder
(``cache_folder.health_folder``) or where the caller says.
"""
