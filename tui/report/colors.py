"""The report's colours, defined once: the verdicts' as the app and the CLI colour them, and the two sides'.

The verdict colours follow :data:`tui.present.format.VERDICT_STYLES` (a Rich style per verdict word): each
Rich colour name maps to one hex colour here, dark enough to read on the page's white background.
"""

from __future__ import annotations

from tui.present.format import VERDICT_STYLES

__all__ = ["RICH_HEX", "VERDICT_COLOURS", "NO_VERDICT", "SIDE_COLOURS", "BAND", "UNITY", "verdict_colour",
           "verdict_class"]

RICH_HEX = {"green": "#1a7f37", "red": "#cf222e", "cyan": "#0b7a83", "yellow": "#9a6700", "magenta": "#a0309e"}
"""The Rich colour names VERDICT_STYLES uses, as hex on white."""

VERDICT_COLOURS = {verdict: RICH_HEX[style.split()[-1]] for verdict, style in VERDICT_STYLES.items()}
"""Verdict word (faster, slower, no change, inconclusive, noisy) -> hex colour."""

NO_VERDICT = "#6e7781"
"""A configuration without a verdict (failed, cancelled)."""

SIDE_COLOURS = {"eager": "#57606a", "compiled": "#0969da"}
"""The distribution plots' two sides."""

BAND = "#eaeef2"
"""The no-change band around 1.0 in the forest plot."""

UNITY = "#24292f"
"""The forest plot's line at 1.0."""


def verdict_colour(verdict: str | None) -> str:
    """The hex colour of a verdict word; :data:`NO_VERDICT` for none or an unknown word."""
    return VERDICT_COLOURS.get(verdict or "", NO_VERDICT)


def verdict_class(verdict: str | None) -> str:
    """The page's CSS class of a verdict word (``v-no-change``); ``v-none`` without one."""
    return "v-" + (verdict or "none").replace(" ", "-") if verdict in VERDICT_COLOURS else "v-none"
