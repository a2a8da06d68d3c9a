"""Acceptance: the burn-in a node passes before the roll resumes it (docs/acceptance.md)."""
