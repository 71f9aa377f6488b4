"""Runners: the one place that assembles services into processes.

The embedded runner puts all six services on one broker in one process
(``benchwright up``); ``serve`` runs one service alone against external NATS
and PostgreSQL. Services never know which runner they are under.
"""
