"""A run as it is kept: the record, its CSV columns, the history, exports, repeats and pruning."""
