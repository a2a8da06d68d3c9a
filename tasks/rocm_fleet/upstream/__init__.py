"""Upstream read on the controller: HTTP, signatures, apt and wheel indexes, locks."""
