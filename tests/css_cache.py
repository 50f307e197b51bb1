"""One parse of each Textual CSS source per test process, shared by every app the tests start.

Textual caches a parsed CSS source per ``Stylesheet``, that is per app: each of the ~260 apps
the inner loop starts parsed ``compile_lab.tcss`` and every widget's default CSS again, a fifth
of the app's start (docs/BENCHMARKS.md, section 12). A user starts one app per process, so the
app itself keeps Textual's cache; the tests front it with this one.

The key is Textual's own (the CSS text, where it was read from, default or not, its tie breaker
and scope) plus the stylesheet's variables: the parse substitutes them (a theme's colours), and
Textual's cache relies on ``set_variables`` clearing it, which does not reach other instances.
A source with errors parses to rules that carry them, and ``Stylesheet.parse`` raises on them
from the cache as it does from a fresh parse.
"""

from __future__ import annotations

import sys
from typing import Any

_shared: dict[tuple[Any, ...], Any] = {}
_installed = False


def install_if_loaded() -> None:
    """Front Textual's parse cache with :data:`_shared` once ``textual.css.stylesheet`` is imported.

    Checked, not imported: a test process that never starts an app never loads Textual for it.
    """
    global _installed
    module = sys.modules.get("textual.css.stylesheet")
    if _installed or module is None:
        return
    stylesheet = module.Stylesheet
    parse_rules = stylesheet._parse_rules

    def shared_parse_rules(self: Any, css: str, read_from: Any, is_default_rules: bool = False,
                           tie_breaker: int = 0, scope: str = "") -> Any:
        key = (css, read_from, is_default_rules, tie_breaker, scope, frozenset(self._variables.items()))
        rules = _shared.get(key)
        if rules is None:
            rules = _shared[key] = parse_rules(self, css, read_from, is_default_rules, tie_breaker, scope)
        return rules

    stylesheet._parse_rules = shared_parse_rules
    _installed = True
