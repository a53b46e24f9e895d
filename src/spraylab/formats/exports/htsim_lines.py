"""``htsim``: one line per flow, ``Flow <name> flowId <id> size <bytes> start <us> finished at
<us> fct <us>``, in microseconds (exact decimals) with the flow ids of the connection matrix
when the run's flows came from one. htsim prints ``finished at`` when the sender has every
byte acknowledged, so the line does too (``acked_ps``); ``fct`` is that minus the start."""

from __future__ import annotations

import pandas as pd

from spraylab.formats.export import EXPORT_LAYOUTS, Naming, ps_as
from spraylab.units import PS_PER_US


@EXPORT_LAYOUTS.register("htsim")
def htsim_lines(flows: pd.DataFrame, done: pd.DataFrame, naming: Naming) -> list[str]:
    nodes = naming.node_of or {}
    lines = []
    for f in done.itertuples(index=False):
        src, dst = nodes.get(int(f.src), int(f.src)), nodes.get(int(f.dst), int(f.dst))
        fid = (naming.flow_name or {}).get(int(f.flow_id), int(f.flow_id))
        lines.append(
            f"Flow flow_{src}_{dst} flowId {fid} size {int(f.size_bytes)} start {ps_as(f.start_ps, PS_PER_US)} "
            f"finished at {ps_as(f.acked_ps, PS_PER_US)} fct {ps_as(f.acked_ps - f.start_ps, PS_PER_US)}"
        )
    return lines
