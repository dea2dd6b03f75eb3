"""Sphinx configuration: the user guide and measured tables in Markdown (MyST), the command-line
reference generated from the argparse parser itself (sphinx-argparse).

Build: ``sphinx-build -W --keep-going -b html docs docs/_build/html`` (``.ci/run`` does).
"""

import sys
from pathlib import Path

# The checkout's package, also when it is not installed (the CLI reference imports its parser).
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from workbench import __version__  # noqa: E402

project = "Workbench"
author = "The Workbench authors"
release = __version__
version = __version__

extensions = ["myst_parser", "sphinxarg.ext"]
source_suffix = {".md": "markdown", ".rst": "restructuredtext"}
root_doc = "index"
exclude_patterns = ["_build"]
myst_heading_anchors = 3
html_theme = "alabaster"
html_title = f"Workbench {__version__}"
