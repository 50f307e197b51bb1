"""What the app, the command line and the report show alike: labels, number formats, option fields, comparisons.

No textual and no torch (rich only inside the functions that render with it), so every front end can
import it; the front ends never import each other (``tests/test_import_graph.py``).
"""
