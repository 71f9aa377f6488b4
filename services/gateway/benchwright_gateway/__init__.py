"""Benchwright gateway service."""
