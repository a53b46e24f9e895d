"""ECMP: each switch hashes the flow's 5-tuple and entropy; a flow keeps one entropy, so one path."""

from __future__ import annotations

from spraylab.lb.base import LoadBalancer, register


@register
class Ecmp(LoadBalancer):
    name = "ecmp"
    where = "switch"
    summary = "hash(5-tuple, entropy, switch salt) % n: one path per flow"
    fluid_model = "hash"
