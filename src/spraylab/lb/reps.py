"""REPS, recycled entropy packet spraying (Bonato et al., 2024), at the sender.

Per queue pair:

* a FIFO (capacity ``buffer``, default 8) of entropies whose ACK came back **without** ECN:
  each clean ACK appends its echoed entropy (when full, the oldest is overwritten);
* each packet (retransmissions too) takes the oldest recycled entropy if any, else a fresh
  random one out of ``paths`` values (so a flow explores while its first window of ACKs is in
  flight);
* an ECN-marked ACK's entropy is not recycled; it is also struck from the FIFO and from the
  known-good list below, so the newest feedback about an entropy wins;
* NACKs (go-back-N / selective repeat) echo the entropy of a packet that *did* cross the
  network (the out-of-order arrival that triggered them), so a NACK without ECN recycles its
  entropy like an ACK. (The paper's NACK is a trimmed packet, a congestion signal; an RNIC's
  NACK is not. CNPs never reach the scheme: the engine gives them to congestion control.)
  Over a recovery mode whose NACKs answer trimmed headers (``uec`` on a trimming fabric,
  ``Recovery.nacks_trimmed``) a NACK is the paper's: its entropy is struck like a marked one.
  (uet-htsim spares a packet trimmed at the last hop, whose path was not to blame; spraylab's
  NACK does not say where the trim happened, so every trim counts against its path.)
* on a retransmission timeout the QP freezes for ``freeze_us``: no fresh entropies; packets
  take the FIFO's entropies, and when the FIFO is empty they cycle over the known-good list:
  the entropies of the last ``buffer`` clean ACKs, repeats included (the paper's ring buffer,
  read without consuming it). An entropy stays known-good only while it keeps being
  confirmed: a list of *distinct* entropies would keep one whose path died, as long as fewer
  than ``buffer`` other entropies came back since (a sprayed flow recycles the same few). With
  no known-good entropy at all the sender must explore, so it still draws a fresh one.

**Entropy space (``paths``).** Default 65536: any 16-bit entropy (the UDP source port of
RoCEv2 and UEC), so fresh draws spread a flow's packets uniformly over its equal-cost paths.
uet-htsim's REPS (``uec_mp.cpp`` ``UecMpReps::nextEntropy``) draws ``rand() % _no_of_paths``
with ``path_entropy_size = 64`` (``main_uec.cpp``, option ``-paths``): 64 values hashed onto
the 16 inter-pod paths of a k = 8 fat-tree give every flow a fixed, uneven share per path (64
balls in 16 bins: its busiest path gets about twice the mean, its busiest ToR uplink about 1.26
times), and with an ACK per 16 KiB (one echo per four packets) ~80% of packets are fresh draws,
so REPS corrects only part of it. Measured on htsim's 128-host permutations
(``benchmarks/nscc_side_by_side.md``): with 16-bit entropies spraylab's REPS took half the ECN
marks it takes with 64, 13% fewer ACKs than htsim (a marked packet is ACKed at once), no trims
where htsim trims, and a p99 FCT 7% below htsim's; with ``paths = 64`` its ACKs, trims and FCTs
are htsim's (pooled p99 within 1%). A power of two: the kernel keeps the low bits of the
16-bit draw, so the default draws exactly what it drew before.

Default ``freeze_us`` = 1000 µs, the transport's default RTO: a timeout is only detected an
RTO after the loss, so a shorter freeze would resume exploring (and may hit the failed path
again) before the next timeout could even tell; one RTO of freezing bounds the damage of a
persistent failure to one timeout per ~2 RTOs while routes reconverge. Scale it with
``transport.rto`` (and to a few RTTs when failures are not the topic).

**Cumulative ACKs (``recycle_overtaken``).** The paper assumes an out-of-order transport that
acknowledges every packet with its own entropy, so the FIFO fills with the paths that deliver
most and soonest. A selective-repeat RNIC ACKs only packets that advance its expected PSN: an
out-of-order arrival gets no ACK, and the packet that finally fills a hole, the one every
later-sent packet overtook, i.e. the one on the *slowest* path, gets the ACK. Recycling that
echo (the paper's rule, ``recycle_overtaken = true``, the default) feeds the FIFO with the
slowest paths: measured on the 128-host permutation over ``sr``, packets on recycled entropies
see a p90 one-way delay of 21 µs against 9.5 µs on fresh ones, queues at the recycled uplinks
grow to 1-1.5 MB, reordering exceeds the 128-packet bitmap, and the run takes ~200 timeouts
and 3.8 ms where random packet spraying takes 1.2 ms (``false``: 14 timeouts, 1.24 ms).
``recycle_overtaken = false`` does not recycle the entropy of an ACK whose packet was overtaken
(the ACK's cumulative PSN moved more than one past the echoed PSN: a hole filler or a late
duplicate); being overtaken says its path was slower than the paths of the packets sent after
it, so it is treated like a congestion mark (not recycled, not struck). It changes nothing for
in-order arrivals nor for the ideal transport's per-packet SACKs of early arrivals."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pydantic import Field, field_validator

from spraylab.core._core import RepsFlow, RepsKernel  # compiled: core/sender_kernels.pxi
from spraylab.lb.base import LbParams, LoadBalancer, is_builtin_hook, register
from spraylab.units import PS_PER_US

if TYPE_CHECKING:
    from spraylab.net.network import Network
    from spraylab.net.packet import Packet
    from spraylab.transport.view import SenderView


class RepsParams(LbParams):
    buffer: int = Field(default=8, ge=1, le=4096, description="recycled-entropy FIFO capacity")
    paths: int = Field(
        default=1 << 16,
        ge=1,
        le=1 << 16,
        description="fresh entropies are drawn from 0 .. paths - 1 (a power of two)",
    )
    freeze_us: float = Field(default=1000.0, gt=0, description="freeze duration after a timeout")
    recycle_overtaken: bool = Field(
        default=True,
        description="recycle the entropy of an ACK whose packet was overtaken (the paper's rule)",
    )

    @field_validator("paths")
    @classmethod
    def _power_of_two(cls, paths: int) -> int:
        # The kernel keeps the low bits of a 16-bit draw: uniform only over a power of two.
        if paths & (paths - 1):
            raise ValueError("must be a power of two from 1 to 65536, e.g. 64")
        return paths


@register
class Reps(LoadBalancer):
    name = "reps"
    where = "sender"
    summary = "REPS: reuse entropies whose ACKs came back unmarked (FIFO), else fresh; freeze on timeout"
    fluid_model = "pool"
    Params = RepsParams

    def __init__(self, params: LbParams | None = None) -> None:
        super().__init__(params)
        self.buffer: int = self.params.buffer  # type: ignore[attr-defined]
        self.freeze_ps = int(self.params.freeze_us * PS_PER_US)  # type: ignore[attr-defined]
        self.sim: Any = None
        self.kernel: Any = None
        self.freezes = 0

    def setup(self, net: Network) -> None:
        super().setup(net)
        self.sim = net.sim
        recycle_overtaken: bool = self.params.recycle_overtaken  # type: ignore[attr-defined]
        paths: int = self.params.paths  # type: ignore[attr-defined]
        self.kernel = RepsKernel(net.sim, net.sim.derive_rng(0x8E95).getrandbits, recycle_overtaken, paths)

    def init_qp(self, qp: SenderView) -> None:
        # The per-packet rules run compiled (RepsKernel), unless a subclass changed them in Python.
        qp.lb = self
        qp.lb_state = RepsFlow(self.buffer)
        if is_builtin_hook(self.entropy, Reps.entropy) and is_builtin_hook(self.on_ack, Reps.on_ack):
            qp.lb_kernel = self.kernel

    def entropy(self, qp: SenderView, psn: int) -> int:
        return self.kernel.entropy_for(qp.lb_state)

    def on_ack(self, qp: SenderView, pkt: Packet) -> None:
        self.kernel.echo(qp.lb_state, pkt)

    def on_nack(self, qp: SenderView, pkt: Packet) -> bool:
        self.kernel.feedback(qp.lb_state, pkt.entropy, pkt.ecn or qp.recovery.nacks_trimmed)
        return False

    def on_timeout(self, qp: SenderView) -> None:
        qp.lb_state.frozen_until = self.sim.now + self.freeze_ps
        self.freezes += 1

    def stats(self) -> dict[str, Any]:
        kernel = self.kernel
        return {
            "reps_fresh": kernel.fresh,
            "reps_recycled": kernel.recycled,
            "reps_frozen_reuses": kernel.frozen_reuses,
            "reps_freezes": self.freezes,
            "reps_overtaken_skipped": kernel.overtaken_skipped,
        }
