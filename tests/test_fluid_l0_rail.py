"""``run.engine = "l0_rail"``: L0 of rail workloads from their byte matrices.

Theory checked: L0 (a phase lasts as long as its busiest link needs for the phase's bytes, a
flow finishes after the busiest of its links plus its base latency). For one-message-per-pair
strategies (``rail_local``, ``rail_spray``) under a splitting scheme the matrix computation
must equal ``run.engine = "l0"`` on the messages, row for row. For every strategy the NIC and
spine bytes must equal the wire bytes of the messages the strategy builds (conservation on the
links L0 reads), and ``rail_matched``'s NVLink bytes too. The array statistics must equal the
row-wise ones of ``spraylab.metrics.collect``.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pandas as pd
import pytest

from spraylab.fluid.collect import link_columns, link_roles, uplink_bytes
from spraylab.fluid.engine import FluidOutcome, prepare, wire_bytes
from spraylab.fluid.l0_rail import distinct, server_sums, wire_bytes_array, wire_grid
from spraylab.metrics.build import uplink_imbalance
from spraylab.metrics.collect import bucket_and_group_statistics, flow_statistics
from spraylab.model.scenario import ScenarioError, validate
from spraylab.runs.experiment import run


def _scenario(
    engine: str, strategy: str, scheme: str = "rps", seed: int = 1, **workload: Any
) -> dict[str, Any]:
    return {
        "topology": {"kind": "rail", "servers": 3, "gpus_per_server": 4, "spines": 2},
        "lb": {"scheme": scheme},
        "workload": {
            "kind": "moe",
            "model": "mixtral-8x7b",
            "phase": "both",
            "strategy": strategy,
            "tokens_per_gpu": 32,
            "expert_compute": "3us",
            "zipf_s": 0.8,
            **workload,
        },
        "run": {"engine": engine, "progress": False, "seed": seed},
    }


def _same(x: Any, y: Any) -> bool:
    if isinstance(x, float) and isinstance(y, float):
        return math.isclose(x, y, rel_tol=1e-12) or (math.isnan(x) and math.isnan(y))
    return bool(x == y)


@pytest.mark.parametrize(
    ("strategy", "scheme", "seed"),
    [
        ("rail_local", "rps", 1),
        ("rail_spray", "rps", 1),
        ("rail_local", "ecmp", 1),
        ("rail_local", "ecmp", 7),
    ],
)
def test_one_message_per_pair_equals_l0_on_the_messages(strategy: str, scheme: str, seed: int) -> None:
    """Under ECMP both must hash every cross-rail message onto the same spine (the packet
    engine's flow ids, entropies and salts), so the spine loads, and every flow, are equal."""
    matrix = run(_scenario("l0_rail", strategy, scheme, seed=seed))
    messages = run(_scenario("l0", strategy, scheme, seed=seed))
    own = {"engine", "wall_s", "l0.binding", "l0.binding_link"}
    for key in set(matrix.summary) | set(messages.summary):
        if key not in own:
            assert _same(matrix.summary.get(key, "missing"), messages.summary.get(key, "missing")), key
    order = ["group", "src", "dst"]
    a = matrix.flows.sort_values(order).reset_index(drop=True).drop(columns="flow_id")
    b = messages.flows.sort_values(order).reset_index(drop=True).drop(columns="flow_id")
    assert a.equals(b)
    assert matrix.links.equals(messages.links)
    assert matrix.groups.equals(messages.groups)


def _message_link_bytes(strategy: str, **workload: Any) -> tuple[np.ndarray, np.ndarray, Any]:
    """Per directed link: the wire bytes of the strategy's messages (each on its route), and
    l0_rail's."""
    sc = validate(_scenario("fluid", strategy, **workload))
    fluid = prepare(sc)
    ff = fluid.fabric
    tx = np.zeros(ff.n_links)
    for spec in fluid.flows:
        route = ff.split_route(spec.src, spec.dst)
        for lid, share in route.items():
            tx[lid] += share * wire_bytes(spec.size_bytes, fluid.mtu_bytes)
    matrix = run(_scenario("l0_rail", strategy, **workload))
    return tx, matrix.links["tx_bytes"].to_numpy(dtype=float), matrix.links


@pytest.mark.parametrize("strategy", ["rail_local", "rail_matched", "rails"])
def test_nic_and_spine_bytes_are_the_messages_wire_bytes(strategy: str) -> None:
    """Per-link bytes of the messages the strategy builds (RailS: every chunk, whatever its
    cut), against the matrix computation; rail_matched's NVLink bytes too. RailS's NVLink
    bytes are an approximation of its chunk cut: their total may differ, each GPU's NVLink
    can carry no more than all it sends or receives off-server."""
    messages, matrix, links = _message_link_bytes(strategy)
    nvlink = links["from"].str.startswith("nvsw") | links["to"].str.startswith("nvsw")
    network = ~nvlink.to_numpy()
    assert messages[network].sum() > 0 and messages[~network].sum() > 0
    assert np.allclose(matrix[network], np.round(messages[network]), rtol=0, atol=1)
    if strategy != "rails":
        assert np.allclose(matrix[~network], messages[~network], rtol=0, atol=1)
    else:
        assert (matrix[~network] >= 0).all() and matrix[~network].sum() > 0


def test_rails_chunks_at_a_small_chunk_size_keep_share_wire_bytes() -> None:
    """RailS chunks are whole packets but a share's last one, so a share's wire bytes are those
    of one message even when it is cut into many chunks."""
    messages, matrix, links = _message_link_bytes("rails", chunk="16KB", tokens_per_gpu=256)
    network = ~(links["from"].str.startswith("nvsw") | links["to"].str.startswith("nvsw")).to_numpy()
    assert np.allclose(matrix[network], np.round(messages[network]), rtol=0, atol=1)


@pytest.mark.parametrize("strategy", ["rail_matched", "rails"])
def test_relayed_phases_are_bounded_below_by_their_busiest_link(strategy: str) -> None:
    """L0's lower bound: no phase ends before its busiest link has carried its bytes."""
    result = run(_scenario("l0_rail", strategy))
    links = result.links
    cap = links["rate_bps"].to_numpy(dtype=float) / 8e12
    slowest = float((links["tx_bytes"].to_numpy(dtype=float) / cap).max())
    ccts = [v for k, v in result.summary.items() if k.startswith("cct_ps[")]
    assert len(ccts) == 2
    # the two phases' busiest links together take at least the whole run's busiest link
    assert sum(ccts) >= slowest * 0.999
    assert result.summary["l0.binding"] in {"host_up", "host_down", "uplink", "downlink"}


def test_array_statistics_equal_the_row_statistics() -> None:
    result = run(_scenario("l0_rail", "rails"))
    rows = result.flows.to_dict("list")
    expected = flow_statistics(rows, int(result.summary["sim_time_ps"]))
    expected |= bucket_and_group_statistics(rows, result.groups.to_dict("records"))
    for key, value in expected.items():
        assert _same(result.summary[key], value), key
    assert _imbalance_by_pandas(result.links) == pytest.approx(
        (result.summary["uplink_imbalance_max"], result.summary["uplink_imbalance_mean"]), rel=1e-12
    )


def _imbalance_by_pandas(links: pd.DataFrame) -> tuple[float, float]:
    """The definition, by a pandas groupby: per switch with two or more uplinks that sent
    anything, its busiest uplink's bytes over their mean; the worst switch and the average."""
    up = links[links["role"] == "uplink"]
    stats = up.groupby("from")["tx_bytes"].agg(["max", "mean", "count", "sum"])
    stats = stats[(stats["count"] >= 2) & (stats["sum"] > 0)]
    if stats.empty:
        return 1.0, 1.0
    ratios = (stats["max"] / stats["mean"]).to_numpy(dtype=float)
    return float(ratios.max()), float(ratios.mean())


def test_uplink_imbalance_matches_its_definition_on_the_link_table() -> None:
    sc = validate(_scenario("fluid", "rail_local", scheme="ecmp"))
    ff = prepare(sc).fabric
    rng = np.random.default_rng(3)
    role = link_roles(ff)
    tx = rng.integers(0, 10**6, size=ff.n_links).astype(float)
    out = FluidOutcome(
        np.zeros(0), np.zeros(0), np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64),
        tx, ff.rate_bps.astype(float), np.ones(ff.n_links, dtype=bool), 10**6, 0, 0, 0, "done",
    )  # fmt: skip
    table = pd.DataFrame(link_columns(ff, out))
    assert list(table["role"]) == list(role)
    assert uplink_imbalance(uplink_bytes(ff, role, tx)) == pytest.approx(
        _imbalance_by_pandas(table), rel=1e-12
    )


@pytest.mark.parametrize("mtu", [4096, 1000, 64, 8])
def test_wire_bytes_of_arrays_equal_the_engines(mtu: int) -> None:
    sizes = np.arange(1, 3 * mtu + 200)
    expected = [wire_bytes(int(v), mtu) for v in sizes]
    assert wire_bytes_array(sizes, mtu).tolist() == expected
    grid = np.concatenate([[0], sizes]).reshape(1, -1)
    assert wire_grid(grid, mtu).ravel().tolist() == [0, *expected]


def test_distinct_equals_unique() -> None:
    for values in (
        np.array([8192, 16384, 8192, 40960, 8]),
        np.array([3, 2**40, 5, 3]),
        np.zeros(4, dtype=int),
    ):
        u, inverse = distinct(values)
        ref_u, ref_inverse = np.unique(values, return_inverse=True)
        assert u.tolist() == ref_u.tolist() and inverse.tolist() == ref_inverse.tolist()


def test_server_sums_of_a_transposed_view_equal_those_of_its_copy() -> None:
    rng = np.random.default_rng(1)
    d1 = rng.integers(0, 100, size=(12, 12))
    for matrix in (d1, d1.T):
        row, col = server_sums(matrix, 3, 4)
        dense = np.ascontiguousarray(matrix).reshape(3, 4, 3, 4)
        assert np.array_equal(row, dense.sum(axis=3).transpose(0, 2, 1))
        assert np.array_equal(col, dense.sum(axis=1))


def test_the_moe_combine_view_gives_the_copy_s_results() -> None:
    """l0_rail reads combine as a transposed view of dispatch: the same result as the copy
    the message builders get."""
    from spraylab.model.scenario import MoeWorkload

    w = MoeWorkload(kind="moe", phase="both", tokens_per_gpu=16)
    views = w.phase_arrays(3, 4, 1)
    copies = w.phase_matrices(3, 4, 1)
    assert [p for p, _ in views] == [p for p, _ in copies] == ["dispatch", "combine"]
    assert all(np.array_equal(a, b) for (_, a), (_, b) in zip(views, copies))
    assert copies[1][1].flags.c_contiguous


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (
            {"workload": {"kind": "permutation", "size": "1MB"}},
            "run.engine = 'l0_rail' needs exactly one rail workload",
        ),
        (
            {
                "topology": {
                    "kind": "rail",
                    "servers": 3,
                    "gpus_per_server": 4,
                    "events": [{"at": "1us", "link": ["rail0", "spine0"], "action": "down"}],
                }
            },
            "topology.events: not modelled by run.engine = 'l0_rail'",
        ),
    ],
)
def test_unsupported_scenarios_are_one_line_errors(change: dict[str, Any], message: str) -> None:
    sc = _scenario("l0_rail", "rails") | change
    with pytest.raises(ScenarioError, match=message.replace("(", r"\(").replace(")", r"\)")):
        run(sc)


@pytest.mark.parametrize(("strategy", "nvlink_hops"), [("rail_matched", 1), ("rails", 2)])
def test_uniform_all_to_all_is_the_nic_closed_form(strategy: str, nvlink_hops: int) -> None:
    """L0 of a uniform all-to-all, S per GPU pair, M servers x N GPUs: every NIC sends and
    receives (M - 1) rail messages of N * S (RailS: shares of N * S per server pair and rail),
    so the phase lasts (M - 1) wire(N S) / C_nic plus the relay chain's latency: NVLink hops
    and the rail, each ``2 delay + first packet / rate`` (two links, the slowest one's
    serialization counted in the transfer)."""
    servers, gpus, size, mtu = 4, 4, 40_960, 4096
    sc = {
        "topology": {"kind": "rail", "servers": servers, "gpus_per_server": gpus, "spines": 2},
        "workload": {"kind": "rail_alltoall", "size": size, "strategy": strategy},
        "run": {"engine": "l0_rail", "progress": False},
    }
    result = run(sc)
    nic_ps_per_byte, nvl_ps_per_byte = 8e12 / 400e9, 8e12 / 3_600e9
    first = wire_bytes(mtu, mtu)
    rail_lat = int(2 * (1_000_000 + first * nic_ps_per_byte) - first * nic_ps_per_byte)
    nvl_lat = int(2 * (250_000 + first * nvl_ps_per_byte) - first * nvl_ps_per_byte)
    busy = (servers - 1) * wire_bytes(gpus * size, mtu) * nic_ps_per_byte
    expected = busy + rail_lat + nvlink_hops * nvl_lat
    assert result.summary["completion_ps"] == pytest.approx(expected, abs=2)
    assert result.summary["l0.binding"] in {"host_up", "host_down"}
