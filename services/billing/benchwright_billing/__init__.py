"""Benchwright billing service."""
