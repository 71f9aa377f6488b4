"""Benchwright orchestrator service."""
