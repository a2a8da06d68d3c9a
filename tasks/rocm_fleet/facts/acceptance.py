"""The node's last acceptance record (``paths.ACCEPTANCE_RECORD``, root-only)."""

from pyinfra.api import FactBase

from rocm_fleet.facts._shell import ABSENT
from rocm_fleet.model import paths
from rocm_fleet.model.acceptance import AcceptanceRead, read_record


class AcceptanceRecordFact(FactBase[AcceptanceRead]):
    """The last acceptance record, read strictly (``model.acceptance.read_record``)."""

    default = AcceptanceRead

    def command(self) -> str:
        path = paths.ACCEPTANCE_RECORD
        return f"if [ -f {path} ]; then head -c 1000000 {path}; else echo {ABSENT}; fi"

    def process(self, output: list[str]) -> AcceptanceRead:
        text = "\n".join(output)
        return AcceptanceRead() if text.strip() == ABSENT else read_record(text)
