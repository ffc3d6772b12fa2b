"""Helpers for testing rlxir and code built on it (hypothesis strategies)."""
