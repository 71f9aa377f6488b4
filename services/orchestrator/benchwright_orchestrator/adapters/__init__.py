"""The orchestrator's ports (``ports.py``) as NATS, the store and other services see them."""
