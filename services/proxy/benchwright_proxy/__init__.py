"""Benchwright proxy service."""
