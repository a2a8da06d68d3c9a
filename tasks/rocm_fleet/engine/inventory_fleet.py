"""The one ``model.fleet.Fleet`` of each pyinfra inventory, each host's data read and validated
once, when first needed."""

import weakref
from collections.abc import Iterator, Mapping
from typing import Any

from rocm_fleet.engine.origin import origin
from rocm_fleet.model.fleet import Fleet

_FLEETS: weakref.WeakKeyDictionary[Any, Fleet] = weakref.WeakKeyDictionary()


class _InventoryData(Mapping[str, Mapping[str, Any]]):
    """A pyinfra inventory as the model reads it: host name -> its merged data."""

    def __init__(self, inventory: Any):
        self._inventory = inventory
        self._names = {host.name: None for host in inventory}  # in the inventory's order

    def __getitem__(self, name: str) -> Mapping[str, Any]:
        host = self._inventory.get_host(name, default=None)
        if host is None:
            raise KeyError(name)
        return host.data.dict()

    def __contains__(self, name: object) -> bool:
        return name in self._names

    def __iter__(self) -> Iterator[str]:
        return iter(self._names)

    def __len__(self) -> int:
        return len(self._names)


def fleet_of(inventory: Any) -> Fleet:
    """The ``Fleet`` of a pyinfra inventory, made on first ask and kept as long as the inventory."""
    fleet = _FLEETS.get(inventory)
    if fleet is None:
        fleet = _FLEETS[inventory] = Fleet(
            _InventoryData(inventory),
            lambda name, key: origin(inventory.get_host(name), key),
        )
    return fleet
