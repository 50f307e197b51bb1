"""The details screen of one run, a tab per question; each tab's body is rendered by its own module."""

from tui.app.components.details.screen import (
    TABS, DetailsScreen, DetailsTab, render_details, render_tab, tab_ids, tabs_help,
)

__all__ = ["DetailsScreen", "DetailsTab", "render_details", "render_tab", "tab_ids", "tabs_help", "TABS"]
