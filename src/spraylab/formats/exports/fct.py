"""``fct``: HPCC's ``fct.txt``, one line per flow as ``scratch/third.cc`` prints it
(``%08x %08x %u %u %lu %lu %lu %lu``)::

    sip dip sport dport size start_ns fct_ns standalone_fct_ns

``sip``/``dip`` are the hosts' IPv4 addresses as HPCC numbers them (node n is
0x0b000001 + (n / 256) x 0x10000 + (n % 256) x 0x100, in hex), ``sport`` counts from 10000 per
source-destination pair in start order (HPCC's port numbers), ``dport`` is flow.txt's for a
run imported from ns-3 and 100 otherwise (HPCC's example flows use 100, and its
``fct_analysis.py`` keeps the flows with ``dport == 100``). As in HPCC the flow completes when
the sender has its last ACK (the flows table's ``acked_ps``), so ``fct_ns`` is that minus the
start; times are whole nanoseconds (ns-3's time step), start and end rounded to the nearest
one, so ``start_ns + fct_ns`` is the end. ``standalone_fct_ns`` is HPCC's formula
(:mod:`spraylab.formats.standalone`). A run imported from ns-3 writes ns-3 node ids."""

from __future__ import annotations

import pandas as pd

from spraylab.formats.export import EXPORT_LAYOUTS, ExportError, Naming, hpcc_ip, ns_round

FCT_COLUMNS = ("sip", "dip", "sport", "dport", "size", "start_ns", "fct_ns", "standalone_fct_ns")
DEFAULT_DPORT = 100  # HPCC's example flows' dport, which fct_analysis.py selects
FIRST_SPORT = 10000  # HPCC's first port number of each host pair


@EXPORT_LAYOUTS.register("fct")
def hpcc_lines(flows: pd.DataFrame, done: pd.DataFrame, naming: Naming) -> list[str]:
    from spraylab.formats.standalone import paths_to, standalone_fct_ns

    sc = naming.scenario
    if sc is None:
        raise ExportError(
            f"--format fct: needs the run's fabric for standalone_fct, but {naming.note.split('(', 1)[-1].rstrip(')')}"
        )
    fabric = sc.topology.build_fabric()
    mtu = sc.transport.mtu
    nodes = naming.node_of or {}
    # HPCC numbers each pair's flows from port 10000 as they start (flow.txt order)
    sport: dict[int, int] = {}
    pair_count: dict[tuple[int, int], int] = {}
    started = flows[flows["start_ps"] >= 0]  # a flow that never started never took a port
    for f in started.sort_values(["start_ps", "flow_id"], kind="stable").itertuples(index=False):
        pair = (int(f.src), int(f.dst))
        sport[int(f.flow_id)] = FIRST_SPORT + pair_count.get(pair, 0)
        pair_count[pair] = pair_count.get(pair, 0) + 1
    paths: dict[int, dict] = {}
    lines = []
    for f in done.itertuples(index=False):
        src, dst, fid = int(f.src), int(f.dst), int(f.flow_id)
        path = paths.setdefault(dst, paths_to(fabric, dst))[fabric.hosts[src]]
        start_ns = ns_round(f.start_ps)
        dport = (naming.dports or {}).get(fid, DEFAULT_DPORT)
        lines.append(
            f"{hpcc_ip(nodes.get(src, src)):08x} {hpcc_ip(nodes.get(dst, dst)):08x} {sport[fid]} {dport} "
            f"{int(f.size_bytes)} {start_ns} {ns_round(f.acked_ps) - start_ns} "
            f"{standalone_fct_ns(path, int(f.size_bytes), mtu)}"
        )
    return lines
