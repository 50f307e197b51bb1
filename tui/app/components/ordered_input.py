"""OrderedInput: Textual's Input whose editing keys act in the order they were typed.

Every text field the app makes (the picker's fields, the workload's parameters, the dialogs') is one.
Textual 8.2.8's ``Input`` inserts a printable character in its own key handler, but its editing keys
(backspace, delete, the arrows, home/end, ctrl+u, ctrl+w, ...) are bindings: such a key bubbles from the
field through its containers to the app, which looks the binding up and only then calls the field's
action. Keys that arrive together (a burst over SSH, a fast typist on a busy app) are all handed to
the field before the first editing key has come back, so the characters typed after it land before
it acts: ``5 0 backspace 1 2`` reads ``501`` and ``ctrl+u 4 2`` an empty field (Textual issue #6605).

This class runs the field's own non-priority bindings from its key handler, the moment the key
arrives, in order with the characters. The field is the first place the app's binding lookup
tries for a focused field, so the same action runs as before, only sooner. A key the field does not
bind, or whose action declines (``check_action``, ``SkipAction``: ctrl+c with nothing selected),
bubbles on as before, so Tab, Escape, ctrl+r and the other keys of the screens and the app work as
they did; priority bindings never reach a field's handler (the app runs them first). The class can
go, and its users take Textual's ``Input`` again, once Textual runs an Input's bindings in order.
"""

from __future__ import annotations

from textual import events
from textual.widgets import Input

__all__ = ["OrderedInput"]


class OrderedInput(Input):
    """An Input that runs its own key bindings at once, in order with the characters typed."""

    async def _on_key(self, event: events.Key) -> None:
        # Textual calls every class's _on_key along the MRO, this one first: Input's then inserts a
        # printable character or, for any other key, restarts the cursor's blink.
        if not event.is_printable and await self._run_own_binding(event.key):
            event.stop()  # handled here: the app must not run the binding a second time

    async def _run_own_binding(self, key: str) -> bool:
        """Run this field's first non-priority binding of ``key`` that acts; whether one did.

        The screen's binding chain (its keymap applied, as the app's lookup reads it) starts at the
        focused widget: when that is not this field (focus moved on while the key was queued), the key
        is left to the app's lookup.
        """
        chain = self.screen._modal_binding_chain
        if not chain or chain[0][0] is not self:
            return False
        for binding in chain[0][1].key_to_bindings.get(key, ()):
            if not binding.priority and await self.app.run_action(binding.action, self):
                return True
        return False
