"""The RoCEv2 reliable-connection transport: the requester core (``qp``), the receivers
(``receiver``), and the pluggable recovery modes (``recovery``) and congestion controls
(``cc``), each registered by name.

Import-light on purpose (the configuration layer imports it to validate names): the registries
load their modules only when asked."""

from __future__ import annotations


def recovery_names() -> list[str]:
    """The registered recovery modes (``transport.recovery``), sorted."""
    from spraylab.transport.recovery.base import RECOVERIES

    return RECOVERIES.names()


def cc_names() -> list[str]:
    """The registered congestion controls (``transport.cc``), sorted."""
    from spraylab.transport.cc.base import CONGESTION_CONTROLS

    return CONGESTION_CONTROLS.names()
