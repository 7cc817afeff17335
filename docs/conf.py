"""Sphinx configuration: the API reference from the docstrings, the narrative pages from Markdown.

Build: ``python -m sphinx -W -b html docs docs/_build/html`` (CI runs it with warnings as errors).
"""

import os
import sys

sys.path.insert(0, os.path.abspath(".."))

project = "cumath"
author = "The cumath developers"
copyright = "the cumath developers; Apache-2.0"
extensions = ["sphinx.ext.autodoc", "sphinx.ext.napoleon", "myst_parser"]
source_suffix = {".rst": "restructuredtext", ".md": "markdown"}
root_doc = "index"
exclude_patterns = ["_build", "architecture.md"]
autodoc_default_options = {"members": True, "undoc-members": False, "show-inheritance": False}
autodoc_typehints = "none"  # signatures as written; the docstrings say the types
autodoc_mock_imports = ["cupy", "torch", "jax", "numba", "mpi4py"]
napoleon_numpy_docstring = False
napoleon_google_docstring = True
napoleon_use_ivar = True  # dataclass fields: one description each (autodoc documents the fields)
myst_heading_anchors = 3
suppress_warnings = ["myst.header", "myst.xref_missing"]  # README headings and links written for GitHub
html_theme = "alabaster"
