"""Benchwright sandbox_manager service."""
