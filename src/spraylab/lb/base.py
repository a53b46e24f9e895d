"""The load-balancer interface and registry.

A scheme may act at the sender (entropy per packet, feedback from ACK/NACK echoes), at
switches (pick an egress among equal-cost candidates) and in ToR programs (see, stamp, hold or
drop packets). It overrides only the hooks it needs; the engine calls them and never needs to
know which scheme runs. Register a scheme with :func:`register` to make it usable by name in
scenario files."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, ClassVar

from pydantic import BaseModel, ConfigDict

from spraylab.registry import Registry

if TYPE_CHECKING:
    from spraylab.net.network import Network
    from spraylab.net.packet import Packet
    from spraylab.transport.view import SenderView


class LbParams(BaseModel):
    """Parameters of a scheme; subclasses add fields. Unknown keys are rejected."""

    model_config = ConfigDict(extra="forbid", frozen=True, defer_build=True)  # as Section (model/types.py)


class LoadBalancer:
    """Base class: by default ECMP at every switch and one entropy per flow."""

    name: ClassVar[str] = ""
    where: ClassVar[str] = ""  # "switch", "sender", "tor" (for listings)
    summary: ClassVar[str] = ""
    Params: ClassVar[type[LbParams]] = LbParams
    # short parameter names accepted in variant labels (``dfs[B=64]``): alias → field of Params
    param_aliases: ClassVar[dict[str, str]] = {}
    # How the flow-level engines (run.engine = "fluid", "l0", "l0_rail") route the scheme's
    # flows: one of the route models of spraylab.fluid.routing ("hash", "split", "entropies",
    # "tor_split", "pool"). None: its choices depend on state those engines do not keep (queue
    # lengths, timers, weights learnt at run time), and they refuse it with one line.
    fluid_model: ClassVar[str | None] = None

    def __init__(self, params: LbParams | None = None) -> None:
        self.params = params if params is not None else self.Params()
        self.net: Network | None = None

    # --- wiring (called once) ---------------------------------------------------------
    def setup(self, net: Network) -> None:
        """Install switch selectors / ToR programs. Default: ECMP everywhere."""
        self.net = net

    def init_qp(self, qp: SenderView) -> None:
        """Called for each new queue pair; sender-side schemes set ``qp.lb = self`` (and may
        set ``qp.psn_window``)."""

    # --- sender hooks (only called when qp.lb is self) -------------------------------
    # A scheme sees the flow's requester through ``SenderView`` (spraylab.transport.view):
    # outstanding PSNs, the current rate, ``resend`` and the PSN window, nothing else.
    def on_flow_start(self, qp: SenderView) -> None:
        pass

    def entropy(self, qp: SenderView, psn: int) -> int:
        return qp.entropy

    def on_ack(self, qp: SenderView, pkt: Packet) -> None:
        pass

    def on_nack(self, qp: SenderView, pkt: Packet) -> bool:
        """A NACK arrived (its cumulative ePSN already applied). Return True to take over the
        retransmission it asks for: over a selective recovery (``qp.recovery.selective``) the
        sender then does not resend ``pkt.psn`` itself, and the scheme resends it through
        ``qp.resend`` when it judges it lost (or not at all if it was only late). Go-back-N
        rewinds whatever the scheme returns."""
        return False

    def on_timeout(self, qp: SenderView) -> None:
        pass

    # --- accounting --------------------------------------------------------------------
    def held_packets(self) -> int:
        """Packets currently held by the scheme (ToR buffers), for conservation checks."""
        return 0

    def stats(self) -> dict[str, Any]:
        """Scheme-specific numbers reported in the run summary (e.g. state sizes)."""
        return {}


# Schemes by name: one module (or package) of spraylab.lb each, imported once on first use.
REGISTRY: Registry[type[LoadBalancer]] = Registry("lb.scheme", "spraylab.lb", what="scheme")
register = REGISTRY.register
load_builtin_schemes = REGISTRY.load_builtins


def is_builtin_hook(bound: Any, function: Any) -> bool:
    """True when ``bound`` (a scheme's hook, read from the instance) is ``function`` itself:
    neither a subclass nor the instance replaced it. A built-in scheme then lets the queue pair
    run its compiled kernel (``qp.lb_kernel``) instead of calling the Python method per packet."""
    return getattr(bound, "__func__", None) is function


def make_lb(name: str, params: dict[str, Any] | None = None) -> LoadBalancer:
    """Build a registered scheme; raises ValueError naming the allowed schemes/params."""
    cls = REGISTRY.get(name)
    return cls(cls.Params(**(params or {})))
