"""The session file format: JSON with JavaScript semantics, lines, entries, migration."""
