"""Check marks a person can read without colour: ``✓`` for on, a blank for off.

Textual's checkbox and selection list draw the same ``X`` either way and tell on from off by
colour only; on a 16-colour or monochrome terminal (``NO_COLOR``) they look alike.
"""

from __future__ import annotations

import logging
from rich.segment import Segment
from textual.strip import Strip
from textual.widgets import Checkbox, SelectionList
from textual.widgets._toggle_button import ToggleButton

__all__ = ["MarkedCheckbox", "MarkedSelectionList", "ON", "OFF"]

logger = logging.getLogger(__name__)

ON = "✓"
OFF = " "


class MarkedCheckbox(Checkbox):
    """A checkbox whose box shows ``✓`` when on and stays blank when off."""

    @property
    def BUTTON_INNER(self) -> str:  # type: ignore[override]  # noqa: N802 (Textual's name)
        """The mark inside the box, from the value."""
        return ON if self.value else OFF


class MarkedSelectionList(SelectionList):
    """A selection list whose boxes show ``✓`` for the selected values and stay blank otherwise."""

    def render_line(self, y: int) -> Strip:
        """Textual's line, with the box's inner character replaced by the selection's mark."""
        strip = super().render_line(y)
        try:
            selection = self.get_option_at_index(self.scroll_offset.y + y)
        except Exception:  # past the last option: Textual's line as it is
            logger.debug("no option at line %d", y, exc_info=True)
            return strip
        mark = ON if selection.value in self.selected else OFF
        segments = list(strip)
        for index, segment in enumerate(segments):
            if segment.text == ToggleButton.BUTTON_INNER:
                segments[index] = Segment(mark, segment.style, segment.control)
                break
        return Strip(segments, strip.cell_length)
