"""The details screen of one run, a tab per question; each tab's body is rendered by its own module."""

from tui.app.components.details.screen import TABS, DetailsScreen, render_details, render_tab

__all__ = ["DetailsScreen", "render_details", "render_tab", "TABS"]
