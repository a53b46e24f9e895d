"""In-band network telemetry (INT) for congestion controls that read it (HPCC).

A congestion control whose class sets ``uses_int`` makes every switch egress port of the
network stamp the data packets leaving it (``Port.int_port_id``; the entry and when it is
taken are in ``spraylab.core``'s port and packet sources, ``IntRecord``). Host NIC ports do not
stamp, as in the HPCC ns-3 model, where the switch pushes the INT hop. Decided once when the
network is built: on every other network no port stamps, no record is made and the data path
pays one integer test per packet.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from spraylab.net.switch import Switch

if TYPE_CHECKING:
    from spraylab.net.network import Network


def enable_int(net: Network) -> int:
    """Number every switch egress port of ``net`` (its INT port id, the index in ``net.ports``)
    so that it stamps data packets; returns how many ports stamp."""
    stamping = 0
    for index, port in enumerate(net.ports):
        if isinstance(port.owner, Switch):
            port.int_port_id = index
            stamping += 1
    return stamping
