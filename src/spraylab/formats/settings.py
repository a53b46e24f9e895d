"""What of a peer simulator's settings an import carries over, and a note for each that does not.

A peer's run is more than its topology and flow files: HPCC's ns-3 reads ``config.txt`` (its
congestion control, packet payload, switch buffer, stop time, ...) and htsim runs its UEC
transport with its own MTU and ACK rule. ``spraylab import`` maps what spraylab models exactly
(:func:`hpcc_config_overrides`) and says, one line per setting, what it does not
(:func:`hpcc_config_notes`, :func:`htsim_notes`), so a run never differs from the peer's
silently.

``config.txt`` is one ``KEY value...`` per line, as ``scratch/third.cc`` reads it:

* ``PACKET_PAYLOAD_SIZE`` (bytes of payload per packet) -> ``transport.mtu`` (spraylab's MTU is
  the payload of a data packet too);
* ``BUFFER_SIZE`` (MB per switch; third.cc gives the switch MMU N x 1024 x 1024 bytes) ->
  ``switch.buffer`` (spraylab's switches share one buffer too);
* ``SIMULATOR_STOP_TIME`` (seconds) -> ``run.time_limit``;
* ``L2_ACK_INTERVAL 1`` (an ACK per packet) -> ``transport.ack_every = 1``;
* ``ERROR_RATE_PER_LINK 0`` and ``LINK_DOWN 0 0 0`` (none) need nothing.

``DATA_RATE`` and ``LINK_DELAY`` are not used for links (topology.txt gives each link's rate
and delay, which the import reads); the file names (``*_FILE``), traces and queue monitors are
outputs of the ns-3 run, not settings of the network. Every other key gets a note."""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from typing import Any

from spraylab.formats.rows import FormatError, field_error, parse_int

# Keys that name files or switch the ns-3 run's own outputs: nothing to carry over.
HPCC_OUTPUT_KEYS = frozenset(
    {
        "TOPOLOGY_FILE",
        "FLOW_FILE",
        "TRACE_FILE",
        "TRACE_OUTPUT_FILE",
        "FCT_OUTPUT_FILE",
        "PFC_OUTPUT_FILE",
        "QLEN_MON_FILE",
        "QLEN_MON_START",
        "QLEN_MON_END",
        "ENABLE_TRACE",
    }
)
# Read by third.cc, but the links take their rate and delay from topology.txt.
HPCC_LINK_KEYS = frozenset({"DATA_RATE", "LINK_DELAY"})
HPCC_CC_MODES = {1: "DCQCN", 3: "HPCC", 7: "TIMELY", 8: "DCTCP", 10: "HPCC-PINT"}
# The nearest spraylab key of settings that do not map exactly (units or model differ: e.g.
# spraylab's DCQCN steps and ECN thresholds are per 100 Gb/s of line rate, HPCC's per map entry;
# docs/congestion-control.md compares them), named in the note so a user can decide.
HPCC_NEAREST = {
    "ENABLE_QCN": "switch.ecn",
    "USE_DYNAMIC_PFC_THRESHOLD": "switch.lossless, switch.pfc_xoff",
    "ALPHA_RESUME_INTERVAL": "transport.dcqcn.alpha_timer",
    "RATE_DECREASE_INTERVAL": "transport.dcqcn.rate_decrease_interval",
    "RP_TIMER": "transport.dcqcn.increase_timer",
    "EWMA_GAIN": "transport.dcqcn.g",
    "FAST_RECOVERY_TIMES": "transport.dcqcn.fast_recovery_rounds",
    "RATE_AI": "transport.dcqcn.rate_ai_per_100g",
    "RATE_HAI": "transport.dcqcn.rate_hai_per_100g",
    "MIN_RATE": "transport.dcqcn.min_rate",
    "KMIN_MAP": "switch.ecn_kmin_per_100g",
    "KMAX_MAP": "switch.ecn_kmax_per_100g",
    "PMAX_MAP": "switch.ecn_pmax",
    "HAS_WIN": "transport.window",
}


@dataclass
class HpccConfig:
    values: dict[str, tuple[list[str], str]]  # key -> (its value tokens, "config.txt line N")


def parse_hpcc_config(text: str, name: str) -> HpccConfig:
    values: dict[str, tuple[list[str], str]] = {}
    for number, line in enumerate(text.splitlines(), start=1):
        tokens = line.split()
        if not tokens:
            continue
        where = f"{name} line {number}"
        key = tokens[0]
        if not key.replace("_", "").isalnum() or not key.isupper():
            raise FormatError(
                f"{where}: {key!r} is not a config key; lines read 'KEY value', e.g. 'BUFFER_SIZE 32'"
            )
        if len(tokens) < 2:
            raise FormatError(f"{where}: {key} has no value; lines read 'KEY value'")
        if key in values:
            raise FormatError(f"{where}: {key} is given twice (first on {values[key][1]})")
        values[key] = (tokens[1:], where)
    return HpccConfig(values)


def _number(where: str, key: str, value: str, minimum: Decimal) -> Decimal:
    try:
        number = Decimal(value)
        if not number.is_finite() or number < minimum:
            raise InvalidOperation
    except InvalidOperation:
        raise field_error(where, key, value, f"must be a number >= {minimum}") from None
    return number


def hpcc_config_overrides(cfg: HpccConfig) -> dict[str, Any]:
    """Scenario keys for the settings spraylab models exactly (see the module doc)."""
    out: dict[str, Any] = {}
    if "PACKET_PAYLOAD_SIZE" in cfg.values:
        tokens, where = cfg.values["PACKET_PAYLOAD_SIZE"]
        out["transport.mtu"] = parse_int(where, "PACKET_PAYLOAD_SIZE", tokens[0], minimum=1)
    if "BUFFER_SIZE" in cfg.values:
        tokens, where = cfg.values["BUFFER_SIZE"]
        out["switch.buffer"] = f"{parse_int(where, 'BUFFER_SIZE', tokens[0], minimum=1)}MiB"
    if "SIMULATOR_STOP_TIME" in cfg.values:
        tokens, where = cfg.values["SIMULATOR_STOP_TIME"]
        stop_s = _number(where, "SIMULATOR_STOP_TIME", tokens[0], Decimal(0))
        if stop_s == 0:
            raise field_error(where, "SIMULATOR_STOP_TIME", tokens[0], "must be > 0 seconds")
        out["run.time_limit"] = f"{stop_s.normalize():f}s"
    if "L2_ACK_INTERVAL" in cfg.values:
        tokens, where = cfg.values["L2_ACK_INTERVAL"]
        if parse_int(where, "L2_ACK_INTERVAL", tokens[0]) == 1:
            out["transport.ack_every"] = 1
    return out


HPCC_MAPPED = {
    "PACKET_PAYLOAD_SIZE": "transport.mtu",
    "BUFFER_SIZE": "switch.buffer",
    "SIMULATOR_STOP_TIME": "run.time_limit",
    "L2_ACK_INTERVAL": "transport.ack_every",
}


def hpcc_mapped_notes(cfg: HpccConfig, overrides: dict[str, Any]) -> list[str]:
    """One line per setting carried over, naming the scenario key it became."""
    return [
        f"{where}: {key} {' '.join(tokens)} -> {HPCC_MAPPED[key]} = {overrides[HPCC_MAPPED[key]]}"
        for key, (tokens, where) in cfg.values.items()
        if key in HPCC_MAPPED and HPCC_MAPPED[key] in overrides
    ]


def _carried(key: str, tokens: list[str]) -> bool:
    """True when spraylab reproduces the setting (mapped, or its value means 'none')."""
    if key in HPCC_OUTPUT_KEYS or key in HPCC_LINK_KEYS:
        return True
    if key in ("PACKET_PAYLOAD_SIZE", "BUFFER_SIZE", "SIMULATOR_STOP_TIME"):
        return True
    if key == "L2_ACK_INTERVAL":
        return tokens[0] == "1"
    if key == "ERROR_RATE_PER_LINK":
        try:
            return Decimal(tokens[0]) == 0
        except InvalidOperation:
            return False
    if key == "LINK_DOWN":
        return all(t == "0" for t in tokens[:3])
    return False


def hpcc_config_notes(cfg: HpccConfig, transport: dict[str, Any]) -> list[str]:
    """One line per ``config.txt`` setting that does not carry over, saying what spraylab runs
    instead (``transport``: the scenario's transport section, as validated)."""
    notes = []
    for key, (tokens, where) in cfg.values.items():
        if _carried(key, tokens):
            continue
        value = " ".join(tokens)
        if key == "CC_MODE":
            mode = HPCC_CC_MODES.get(int(tokens[0]) if tokens[0].isdigit() else -1, "unknown")
            what = f"{mode}; spraylab runs transport.cc = {transport['cc']!r} with its own parameters"
        elif key == "L2_ACK_INTERVAL":
            what = "an ACK per this many payload bytes of progress; spraylab's rule is transport.ack_*"
        elif key == "L2_BACK_TO_ZERO":
            what = f"HPCC's go-back on loss; spraylab runs transport.recovery = {transport['recovery']!r}"
        elif key == "ERROR_RATE_PER_LINK":
            what = "random loss on every link; give it as topology.events entries (action = 'loss')"
        elif key == "LINK_DOWN":
            what = "a link failure; give it as a topology.events entry (action = 'down')"
        elif key in HPCC_NEAREST:
            what = f"not the same setting; the nearest is {HPCC_NEAREST[key]} (--set it if it should match)"
        else:
            what = "no spraylab equivalent (docs/formats.md lists what maps)"
        notes.append(f"{where}: {key} {value} is not carried over: {what}")
    return notes


def spraylab_transport_notes(tool: str, transport: dict[str, Any]) -> list[str]:
    """The transport a scenario without ``--base`` runs, one setting per line: the peer's file
    does not say it, so it must not go unsaid."""
    every = transport["ack_every"]
    acks = (
        "an ACK per packet"
        if every == 1
        else f"ack_every = {every}, ack_every_bytes = {transport['ack_every_bytes']} ({transport.get('ack_bytes', 'payload')} bytes)"
    )
    return [
        f"transport.recovery = {transport['recovery']!r}: spraylab's RoCE recovery, not {tool}'s transport",
        f"transport.cc = {transport['cc']!r}: spraylab's congestion control, not {tool}'s",
        f"transport.mtu = {transport['mtu']} B of payload per packet",
        f"transport ACK rule: {acks}",
    ]


# htsim's UEC driver (main_uec) defaults: a 4150 B packet of which 64 B is header, and an ACK
# when the accepted packets' sizes reach 16384 B.
HTSIM_PACKET_BYTES = 4150
HTSIM_HEADER_BYTES = 64
HTSIM_ACK_BYTES = 16384


def htsim_notes(transport: dict[str, Any]) -> list[str]:
    """What of htsim's UEC run the files do not carry, with the settings that match it where
    spraylab has them."""
    mss = HTSIM_PACKET_BYTES - HTSIM_HEADER_BYTES
    if transport["cc"] == "nscc" and transport["recovery"] == "uec":
        notes = [
            "htsim's UEC transport runs as spraylab's NSCC and uec recovery (docs/congestion-control.md "
            "lists what differs); its switches are the scenario's: htsim trims at a queue of 1 BDP and "
            "marks ECN from 20% to 80% of a BDP (switch.trimming, switch.port_buffer, switch.ecn_kmin_per_100g, "
            "switch.ecn_kmax_per_100g, switch.ecn_pmax = 1 to match; benchmarks/nscc_side_by_side.py sets them)",
        ]
    else:
        notes = [
            "htsim's UEC transport (NSCC/RCCC congestion control, packet trimming, its own loss recovery) "
            f"is not modelled: spraylab runs transport.recovery = {transport['recovery']!r}, "
            f"transport.cc = {transport['cc']!r} (transport.cc = 'nscc' with recovery 'uec' is its sender side)",
        ]
    if transport["mtu"] != mss:
        notes.append(
            f"MTU: htsim's default packet is {HTSIM_PACKET_BYTES} B ({mss} B payload + {HTSIM_HEADER_BYTES} B header); "
            f"spraylab sends transport.mtu = {transport['mtu']} B of payload (--set transport.mtu={mss} to match)"
        )
    htsim_rule = (
        transport["ack_every"] == 0
        and transport["ack_every_bytes"] == HTSIM_ACK_BYTES
        and transport.get("ack_bytes", "payload") == "htsim"
    )
    if not htsim_rule:
        notes.append(
            f"ACKs: htsim ACKs when the accepted packets reach {HTSIM_ACK_BYTES} B counting their headers; "
            "spraylab's ACK rule here differs (--set transport.ack_every=0 --set transport.ack_every_bytes="
            f"{HTSIM_ACK_BYTES} --set transport.ack_bytes=htsim to match)"
        )
    return notes
