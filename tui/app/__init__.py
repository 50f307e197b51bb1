"""The Textual app: a view over the engine's worker events and results. Never imports torch."""
