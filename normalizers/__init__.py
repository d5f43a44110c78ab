"""Pure functions from the spans of one trace to one trajectory; no I/O."""
