"""The compiled core is what runs: the extension module is built (no silent fallback to
interpreted code) and every engine module hands out its classes."""

from __future__ import annotations

import importlib.machinery

import spraylab.core._core as core

from spraylab.engine.simulator import Simulator
from spraylab.net.host import Host, Nic
from spraylab.net.packet import Packet
from spraylab.net.port import PfcPort, Port
from spraylab.net.switch import SharedBuffer, Switch
from spraylab.transport.qp import QueuePair
from spraylab.transport.receiver import Receiver
from spraylab.transport.recovery.gbn import GoBackN
from spraylab.transport.recovery.ideal import IdealRecovery
from spraylab.transport.recovery.sr import SelectiveRepeat


def test_the_core_is_an_extension_module() -> None:
    assert core.__file__.endswith(tuple(importlib.machinery.EXTENSION_SUFFIXES)), core.__file__


def test_engine_classes_are_the_compiled_ones() -> None:
    for cls in (Simulator, Packet, Port, PfcPort, SharedBuffer, Switch, Host, Nic, QueuePair, Receiver):
        assert cls.__module__ == "spraylab.core._core", cls
    for recovery in (GoBackN, SelectiveRepeat, IdealRecovery):
        assert recovery.receiver.__module__ == "spraylab.core._core", recovery
