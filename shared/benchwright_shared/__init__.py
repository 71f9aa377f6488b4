"""Contracts and plumbing shared by every Benchwright service.

Nothing here knows about any one service: message contracts and the subjects
they travel on, the broker and event-store factories, settings, ids, hashing
and money.
"""
