"""The tiers of the suite and their budgets (tests/tiers.py); pytester tests the budgets."""

pytest_plugins = ["tiers", "pytester"]
