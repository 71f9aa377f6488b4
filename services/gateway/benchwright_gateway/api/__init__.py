"""The public ``/v1`` HTTP API."""
