"""Drivers: what turns a request and a dataset into a scorer for a run."""
