"""Studies as data (``spraylab.study``): parsing errors are one line, claims are judged against
the store both ways, a template cannot carry a typed-in number, and a tiny study runs and renders
end to end with every number taken from the store."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path
from typing import Any

import pytest

from spraylab.cli import main
from spraylab.model.scenario import ScenarioError
from spraylab.study.claims import evaluate
from spraylab.study.data import StudyData
from spraylab.study.definition import Study
from spraylab.study.numbers import check_template, typed_numbers

TINY_FABRIC = """
[sweep.topology]
kind = "leaf_spine"
leaves = 2
spines = 2
hosts_per_leaf = 2
[sweep.workload]
kind = "permutation"
size = "64KB"
"""


def write_study(tmp_path: Path, body: str, template: str = "# {{ study.title }}\n") -> Path:
    (tmp_path / "page.md.j2").write_text(template)
    path = tmp_path / "s.toml"
    path.write_text(textwrap.dedent(body))
    return path


def base_study(claims: str = "") -> str:
    return (
        'name = "s"\ntemplate = "page.md.j2"\n\n[[sweep]]\nname = "perm"\n'
        'variants = ["ecmp/sr", {label = "rps/ideal", seeds = [1, 2]}, "dfs[B=64]/sr"]\n'
        + TINY_FABRIC
        + claims
    )


def run_cli(monkeypatch: pytest.MonkeyPatch, *args: str) -> int:
    monkeypatch.setattr("sys.argv", ["spraylab", *args])
    with pytest.raises(SystemExit) as exit_info:
        main()
    return int(exit_info.value.code or 0)


# --- parsing ------------------------------------------------------------------------------------


def test_study_expands_variants_with_their_own_seeds(tmp_path: Path) -> None:
    study = Study.load(write_study(tmp_path, base_study()))
    points = study.sweeps["perm"].points
    assert [(p.values["variant"], p.values["run.seed"]) for p in points] == [
        ("ecmp/sr", 1),
        ("rps/ideal", 1),
        ("rps/ideal", 2),
        ("dfs[B=64]/sr", 1),
    ]
    dfs = points[-1].scenario
    # the label's alias B is DFS's reorder_bound_packets, and /sr the RNIC's recovery
    assert (dfs.lb.scheme, dfs.lb.params, dfs.transport.recovery) == (
        "dfs",
        {"reorder_bound_packets": 64},
        "sr",
    )


BAD_STUDIES = [
    ('name = "s"\ntemplate = "page.md.j2"\ncolour = 1\n', "colour = 1: unknown key"),
    (base_study().replace('"ecmp/sr"', '"nope/sr"'), "unknown scheme 'nope'"),
    (base_study().replace('"ecmp/sr"', '"ecmp/tcp"'), "unknown recovery 'tcp'"),
    (base_study().replace("seeds = [1, 2]", "seeds = [1, 1]"), "must be a non-empty list of distinct"),
    (
        base_study(
            '[[claim]]\nid = "c"\nsweep = "perm"\nmetric = "completion_ps"\ncompare = "=<"\nvalue = 1\n'
        ),
        "compare = '=<': allowed: <, <=",
    ),
    (
        base_study(
            '[[claim]]\nid = "c"\nsweep = "perm"\nmetric = "completion_ps"\nof = "rps/sr"\ncompare = "<"\nvalue = 1\n'
        ),
        "of.variant = 'rps/sr': not a value of the axis",
    ),
    (
        base_study(
            '[[claim]]\nid = "c"\nsweep = "nope"\nmetric = "completion_ps"\ncompare = "<"\nvalue = 1\n'
        ),
        "sweep = 'nope': no such sweep",
    ),
    (
        base_study('[[claim]]\nid = "c"\nsweep = "perm"\nmetric = "completion_ps"\ncompare = "<"\n'),
        "reference / value: give exactly one",
    ),
    (
        base_study().replace('template = "page.md.j2"', 'template = "missing.j2"'),
        "template = 'missing.j2': no such file",
    ),
    (
        'name = "s"\ntemplate = "page.md.j2"\n[references.paper]\nvalue = 0.2\nunit = "percent"\nsource = "a paper"\n'
        + base_study().split("\n", 2)[2],
        "references.paper.unit = 'percent': allowed: ps, bps",
    ),
]


@pytest.mark.parametrize("body, message", BAD_STUDIES)
def test_bad_study_is_one_error_line_and_exit_2(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    body: str,
    message: str,
) -> None:
    path = write_study(tmp_path, body)
    assert run_cli(monkeypatch, "study", "check", str(path)) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and err.count("\n") == 1, err
    assert message in err


# --- no typed-in numbers ------------------------------------------------------------------------


def test_prose_numbers_are_found_but_names_and_code_are_not() -> None:
    text = "RoCEv2 on Mixtral-8x7B, top-2 routing, p99: `dfs[B=64]/sr` at 400 Gb/s (0 discards), 1.2x faster"
    assert [word for _, word in typed_numbers(text)] == ["400", "0", "1.2x"]
    assert typed_numbers("1. a list item\n2. another") == []


@pytest.mark.parametrize(
    "template",
    [
        "DFS is 1.15 times slower",  # typed into the prose
        "{{ value('p', 'completion_ps') * 1.15 }}",  # a formula in an expression
        "{% if value('p', 'retx_ratio') > 0.5 %}collapses{% endif %}",  # a threshold in an expression
        "{% set limit = 400 %}",
        "{{ 'at 400 Gb/s' }}",  # prose smuggled in a string
    ],
)
def test_a_template_with_a_number_not_from_the_store_is_refused(template: str) -> None:
    problems = check_template(template, "t.md.j2")
    assert problems and all(p.startswith("t.md.j2 line 1: ") for p in problems)


def test_numbers_as_selectors_and_precision_are_allowed() -> None:
    template = (
        "{{ table('p', [{'metric': 'spurious_retx_ratio', 'digits': 2}], where={'run.seed': 2}) }} "
        "{{ value('p', 'cct_ps[0:moe:dispatch] / rails_t_star_ps[dispatch]') }} {{ axis('p', 'k')[0] }} "
        "{% if info.profile == 1 %}`B = 64`{% endif %}"
    )
    assert check_template(template, "t") == []


def test_study_whose_template_types_a_number_is_refused_before_running(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write_study(tmp_path, base_study(), template="ECMP takes 2.5 ms here.\n")
    assert run_cli(monkeypatch, "sweep", str(path), "--out", str(tmp_path / "store")) == 2
    assert "page.md.j2 line 1: '2.5': a number typed into the prose" in capsys.readouterr().err
    assert not (tmp_path / "store").exists()


# --- claims against a synthetic store -----------------------------------------------------------

SUMMARIES = {  # (variant, seed) -> summary (incast_bound_ps: a theory metric, stored here as a value)
    ("ecmp/sr", 1): {"completion_ps": 100.0, "drops": 0, "incast_bound_ps": 120.0},
    ("rps/ideal", 1): {"completion_ps": 70.0, "drops": 3, "incast_bound_ps": 60.0},
    ("rps/ideal", 2): {"completion_ps": 90.0, "drops": 0, "incast_bound_ps": 95.0},
    ("dfs[B=64]/sr", 1): {"completion_ps": 80.0, "drops": 0, "incast_bound_ps": 90.0},
}


def synthetic(tmp_path: Path, claims: str) -> StudyData:
    study = Study.load(write_study(tmp_path, base_study(claims)))
    data = StudyData(study, tmp_path / "empty-store")
    for p in data.sweeps["perm"]:
        summary = SUMMARIES.get((p.values["variant"], p.values["run.seed"]))
        if summary is not None:
            p.status = "done"
            p._cache["summary"] = summary
    return data


def claim(id_: str, **fields: Any) -> str:
    lines = [f'[[claim]]\nid = {json.dumps(id_)}\nsweep = "perm"']
    lines += [f"{k} = {json.dumps(v) if not isinstance(v, dict) else _inline(v)}" for k, v in fields.items()]
    return "\n".join(lines) + "\n"


def _inline(table: dict[str, Any]) -> str:
    return "{" + ", ".join(f"{json.dumps(k)} = {json.dumps(v)}" for k, v in table.items()) + "}"


CASES = [
    # mean of rps/ideal (80) against ecmp/sr (100): a factor decides
    (dict(metric="completion_ps", of="rps/ideal", compare="<=", reference="ecmp/sr", factor=0.8), True),
    (dict(metric="completion_ps", of="rps/ideal", compare="<=", reference="ecmp/sr", factor=0.79), False),
    # other statistics over rps/ideal's two seeds: median 80, min 70, max 90
    (dict(metric="completion_ps", of="rps/ideal", statistic="min", compare="<", value=71), True),
    (dict(metric="completion_ps", of="rps/ideal", statistic="max", compare="<", value=90), False),
    (dict(metric="completion_ps", of="rps/ideal", statistic="median", compare="==", value=80), True),
    # each point against its own reference metric (a theory): seed 1 is 70 > 60
    (
        dict(
            metric="completion_ps",
            of="rps/ideal",
            statistic="each",
            compare="<=",
            reference={"metric": "incast_bound_ps"},
        ),
        False,
    ),
    (
        dict(
            metric="completion_ps",
            of="ecmp/sr",
            statistic="each",
            compare="<=",
            reference={"metric": "incast_bound_ps"},
        ),
        True,
    ),
    # each point against the reference variant's point on the same seed (only seed 1 has one)
    (
        dict(
            metric="completion_ps", of="rps/ideal", statistic="each", compare="<", reference={"of": "ecmp/sr"}
        ),
        True,
    ),
    (
        dict(
            metric="completion_ps", of="ecmp/sr", statistic="each", compare="<", reference={"of": "rps/ideal"}
        ),
        False,
    ),
    # wildcards and tolerance
    (dict(metric="drops", of={"variant": "*/sr"}, statistic="max", compare="==", value=0), True),
    (dict(metric="drops", statistic="max", compare="==", value=0), False),
    (dict(metric="completion_ps", of="dfs[B=64]/sr", compare="==", value=81, tolerance=1), True),
    (dict(metric="completion_ps", of="dfs[B=64]/sr", compare="==", value=82, tolerance=1), False),
    # an expression of metrics of one point
    (dict(metric="completion_ps - incast_bound_ps", of="ecmp/sr", compare="==", value=-20), True),
]


@pytest.mark.parametrize("fields, met", CASES)
def test_claims_are_judged_against_the_store(tmp_path: Path, fields: dict[str, Any], met: bool) -> None:
    data = synthetic(tmp_path, claim("c", **fields))
    verdict = evaluate(data.study.claims[0], data)
    assert verdict.met is met, verdict.measured


def test_a_claim_on_runs_the_store_lacks_is_missing_not_met(tmp_path: Path) -> None:
    data = synthetic(tmp_path, claim("c", metric="completion_ps", of="rps/ideal", compare="<", value=1))
    for p in data.sweeps["perm"]:
        if p.values["run.seed"] == 2:
            p.status = "missing"
    verdict = evaluate(data.study.claims[0], data)
    assert verdict.met is None and verdict.word == "missing"


def test_for_each_expands_a_claim_per_combination(tmp_path: Path) -> None:
    body = base_study(
        '[[claim]]\nid = "c-{v}"\nfor_each = {v = ["ecmp/sr", "dfs[B=64]/sr"]}\nsweep = "perm"\n'
        'metric = "completion_ps"\nof = "{v}"\ncompare = "<="\nvalue = 100\n'
    )
    data = synthetic(tmp_path, "")
    study = Study.load(write_study(tmp_path / "x" if (tmp_path / "x").mkdir() is None else tmp_path, body))
    assert [c.id for c in study.claims] == ["c-ecmp/sr", "c-dfs[B=64]/sr"]
    data.study.claims[:] = study.claims
    assert [evaluate(c, data).met for c in study.claims] == [True, True]


# --- end to end ---------------------------------------------------------------------------------


def test_tiny_study_runs_renders_and_reuses_the_store(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    body = (
        'name = "tiny"\ntitle = "Tiny"\ntemplate = "page.md.j2"\n\n[[sweep]]\nname = "perm"\n'
        'variants = ["ecmp/sr", {label = "rps/ideal", seeds = [1, 2]}]\n'
        + TINY_FABRIC
        + '\n[[sweep]]\nname = "hash"\nanalysis = "fat_tree_hash_uniformity"\n[sweep.axes]\nk = [4]\n\n'
        + '[[claim]]\nid = "spray"\nsweep = "perm"\nmetric = "completion_ps"\nof = "rps/ideal"\n'
        'compare = "<="\nreference = "ecmp/sr"\nfactor = 2\n\n'
        '[[claim]]\nid = "hash"\nsweep = "hash"\nmetric = "p_value"\nstatistic = "each"\ncompare = ">"\nvalue = 1\n'
    )
    template = (
        "# {{ study.title }}\n\n{{ table('perm', ['completion_ps', 'drops'], ratio_to=['completion_ps', 'ecmp/sr']) }}\n\n"
        "ECMP: {{ value('perm', 'completion_ps', of='ecmp/sr') }} on {{ scenario('perm').topology.host_rate | rate }}.\n\n"
        "{{ claims_table() }}\n"
    )
    path = write_study(tmp_path, body, template)
    store, page = tmp_path / "store", tmp_path / "page.md"
    assert run_cli(monkeypatch, "sweep", str(path), "--out", str(store), "--jobs", "2", "--no-progress") == 0
    assert "perm: 3 runs: 3 done" in capsys.readouterr().out
    assert run_cli(monkeypatch, "study", "render", str(store), "--page", str(page)) == 0
    text = page.read_text()
    # every number is the store's: the ECMP run's completion, formatted
    study = Study.load(path)
    ecmp = next(p for p in study.sweeps["perm"].points if p.values["variant"] == "ecmp/sr")
    summary = json.loads((store / "perm" / "runs" / ecmp.key / "summary.json").read_text())
    assert f"ECMP: {summary['completion_ps'] / 1e6:.1f} us on 400Gbps." in text
    assert "| `spray` |" in text and "**met**" in text  # spraying within twice ECMP
    assert "| `hash` |" in text and "**not met**" in text  # a p-value is never above one
    # a rerun reuses every stored point
    assert run_cli(monkeypatch, "study", "run", str(path), "--out", str(store), "--no-progress") == 0
    out = capsys.readouterr().out
    assert "perm: 3 runs: 0 done, 0 failed, 3 skipped" in out and "hash: 1 points: 0 computed, 1 kept" in out
    # a page the renderer did not write is never overwritten
    mine = tmp_path / "notes.md"
    mine.write_text("my notes\n")
    assert run_cli(monkeypatch, "study", "render", str(store), "--page", str(mine)) == 2
    assert mine.read_text() == "my notes\n"


def test_a_plain_sweep_takes_a_variant_axis(tmp_path: Path) -> None:
    from spraylab.sweeps.sweep import Sweep

    data = {"topology": {"kind": "leaf_spine", "leaves": 2, "spines": 2, "hosts_per_leaf": 2},
            "workload": {"kind": "permutation", "size": "64KB"},
            "axes": {"variant": ["ecmp/gbn", "dfs[B=64,loss=dfs]/sr"], "run.seed": [1, 2]}}  # fmt: skip
    sweep = Sweep.from_dict(data)
    dfs = [p.scenario for p in sweep.points if p.values["variant"].startswith("dfs")]
    assert len(dfs) == 2
    assert dfs[0].lb.params == {"reorder_bound_packets": 64, "loss_detection": "dfs"}
    assert dfs[0].transport.recovery == "sr"
    with pytest.raises(ScenarioError) as exc:
        Sweep.from_dict({**data, "axes": {"variant": ["ecmp/gbn", "dfs[B=64/sr"]}})
    assert exc.value.lines == [
        "axes.variant = 'dfs[B=64/sr': parameters go in brackets, e.g. dfs[reorder_bound_packets=128]"
    ]


def test_an_unknown_metric_is_one_line_at_render(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from spraylab.study import render as render_module

    # a name of a documented family the runs do not have (a misspelt name is refused at load:
    # test_a_claim_on_an_unknown_metric_is_refused_before_anything_runs)
    data = synthetic(tmp_path, claim("c", metric="cct_ps[no_such_group]", of="ecmp/sr", compare="<", value=1))
    monkeypatch.setattr(render_module, "StudyData", lambda study, root: data)
    with pytest.raises(render_module.RenderError) as exc:
        render_module.render(data.study, tmp_path / "empty-store")
    assert "metric 'cct_ps[no_such_group]'" in str(exc.value) and "\n" not in str(exc.value)


def test_a_rail_spray_point_is_keyed_as_it_runs() -> None:
    """``rail_spray`` under ECMP runs as ``rps`` and its result records that scenario: the point
    must be keyed the same, or the sweep would reject every such run as another scenario."""
    from spraylab.results.store import scenario_key
    from spraylab.sweeps.executors import execute
    from spraylab.sweeps.sweep import Sweep

    sweep = Sweep.from_dict(
        {
            "topology": {"kind": "rail", "servers": 2, "gpus_per_server": 2, "spines": 2},
            "switch": {"lossless": True},
            "transport": {"cc": "none", "recovery": "ideal"},
            "workload": {"kind": "rail_alltoall", "size": "8KB"},
            "axes": {"workload.strategy": ["rail_local", "rail_spray"]},
        }
    )
    local, spray = sweep.points
    assert (local.scenario.lb.scheme, spray.scenario.lb.scheme) == ("ecmp", "rps")
    outcome = execute(spray.scenario.to_dict())
    assert outcome.result is not None
    assert scenario_key(outcome.result.scenario) == spray.key


class _TwoSlots:
    """Two workers, the older run finishing at each wait: records which runs were in flight
    together (by flow size, which tells the two sweeps apart)."""

    name = "two-slots"
    slots = 2

    def __init__(self) -> None:
        from spraylab.sweeps.executors import execute

        self.execute = execute
        self.running: dict[int, dict[str, Any]] = {}
        self.together: list[set[str]] = []
        self.next = 0

    def submit(self, scenario: dict[str, Any]) -> int:
        self.next += 1
        self.running[self.next] = scenario
        return self.next

    def wait(self, handles: Any, timeout: float) -> list[tuple[int, Any]]:
        self.together.append({s["workload"][0]["size"] for s in self.running.values()})
        first = min(self.running)
        return [(first, self.execute(self.running.pop(first)))]

    def shutdown(self, cancel: bool = False) -> None:
        pass


def test_a_study_keeps_every_worker_busy_across_its_sweeps(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """One queue for the whole study: while the first sweep's last run is in flight the next
    sweep's first run takes the idle worker (sweep by sweep, the 2-slot pool would run one)."""
    from spraylab.study.run import run_study

    body = (
        'name = "s"\ntemplate = "page.md.j2"\n\n[[sweep]]\nname = "a"\nvariants = ["ecmp/sr"]\n'
        + TINY_FABRIC
        + '\n[[sweep]]\nname = "b"\nvariants = ["ecmp/sr", "rps/ideal"]\n'
        + TINY_FABRIC.replace('"64KB"', '"32KB"')
    )
    study = Study.load(write_study(tmp_path, body))
    pool = _TwoSlots()
    monkeypatch.setattr("spraylab.study.run.make_executor", lambda *args: pool)
    outcome = run_study(study, tmp_path / "store")
    assert [o.done for o in outcome.sweeps.values()] == [1, 2]
    assert pool.together[0] == {64000, 32000}  # sweep a's only run beside sweep b's first


def test_a_claim_on_an_unknown_metric_is_refused_before_anything_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 27: ``study run`` accepted a claim on a misspelt metric and ran every point before
    finding it missing. Refused at load (exit 2, one line naming the claim and the metric), with
    no store written; the spelling it meant is accepted."""
    claim = '\n[[claim]]\nid = "c1"\nsweep = "perm"\nmetric = "{m}"\ncompare = "<="\nvalue = 1\n'
    path = write_study(tmp_path, base_study(claim.format(m="completion_pss")))
    store = tmp_path / "store"
    assert run_cli(monkeypatch, "study", "run", str(path), "--out", str(store), "--no-progress") == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "claim c1" in err[0] and "completion_pss" in err[0], err
    assert not store.exists()
    fixed = write_study(tmp_path, base_study(claim.format(m="completion_ps / fct_p50_ps")))
    assert [c.metric for c in Study.load(fixed).claims] == ["completion_ps / fct_p50_ps"]
