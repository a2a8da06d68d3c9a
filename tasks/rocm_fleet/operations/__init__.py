"""Operations pyinfra's built-ins get wrong for this job (docs/decisions/own-operations.md), one
module per thing touched: each yields the commands that close the gap, or ``host.noop`` with why."""
