"""pi-session-server: pi coding-agent session files in Python.

Layers (data flows one way): ``format`` (what a line is) -> ``session`` (what a session is)
-> ``analysis`` (what a reader should know about a file) -> ``server`` (pygls, thin handlers).
Nothing below ``server`` imports pygls or lsprotocol.
"""

__version__ = "0.1.0"
