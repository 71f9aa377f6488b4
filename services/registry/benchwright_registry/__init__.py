"""Benchwright registry service."""
