"""The audit: a read-only drift report of a fleet (table, JSON or OpenMetrics)."""
