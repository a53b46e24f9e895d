"""Sweep and study files are validated by pydantic models (spraylab.model.sweep,
spraylab.study.schema) through the scenario's one-line formatter (model.errors.problems_of).

The house rule for bad input (docs/design.md, "Bad input is rejected before anything runs"): a
malformed file ends the command with exit code 2 and exactly one ``error:`` line that names the
key, the value given and what is allowed, never a traceback. Each case below breaks one key of a
valid file in one way (an unknown key, a wrong type, a bad value) and runs the real CLI entry
point on it.
"""

from __future__ import annotations

import textwrap
from pathlib import Path
from typing import Any

import pytest
import tomli_w
from cliutil import invoke

from spraylab.model.scenario import ScenarioError
from spraylab.study.definition import Study
from spraylab.sweeps.sweep import Sweep

FABRIC = {
    "topology": {"kind": "leaf_spine", "leaves": 2, "spines": 2, "hosts_per_leaf": 2},
    "workload": {"kind": "permutation", "size": "64KB"},
    "run": {"progress": False},
}


def sweep_file(**top: Any) -> dict[str, Any]:
    """A valid sweep file (two points) with top-level keys replaced."""
    return {**FABRIC, "axes": {"lb.scheme": ["ecmp", "rps"]}, **top}


SWEEP_CASES: dict[str, tuple[dict[str, Any], tuple[str, ...]]] = {
    # unknown keys
    "unknown_top_key": (
        sweep_file(jobs=4),
        ("jobs = 4", "unknown key", "allowed keys: name, base, baseline, axes, topology"),
    ),
    "unknown_axis_section": (
        sweep_file(axes={"fabric.leaves": [2, 4]}),
        ("axes.fabric.leaves", "unknown section 'fabric'", "allowed: topology, switch"),
    ),
    # wrong types
    "name_not_a_string": (sweep_file(name=3), ("name = 3", "Input should be a valid string")),
    "baseline_a_list": (sweep_file(baseline=["ecmp"]), ("baseline = ['ecmp']", "valid string")),
    "axes_not_a_table": (sweep_file(axes="lb.scheme"), ("axes = 'lb.scheme'", "valid dictionary")),
    "axis_not_a_list": (sweep_file(axes={"run": {"seed": 2}}), ("axes.run.seed = 2", "non-empty list")),
    # bad values
    "axis_empty_list": (sweep_file(axes={"lb": {"scheme": []}}), ("axes.lb.scheme = []", "non-empty list")),
    "axis_value_twice": (
        sweep_file(axes={"workload.size": ["1MB", "1MB"]}),
        ("axes.workload.size = ['1MB', '1MB']", "repeated value"),
    ),
    "variant_label_unclosed": (
        sweep_file(axes={"variant": ["ecmp/sr", "dfs[B=64/sr"]}),
        ("axes.variant = 'dfs[B=64/sr'", "parameters go in brackets"),
    ),
    "variant_not_a_label": (
        sweep_file(axes={"variant": ["ecmp/sr", 3]}),
        ("axes.variant = ['ecmp/sr', 3]", "non-empty list of labels"),
    ),
}


STUDY = """\
name = "s"
template = "page.md.j2"
{top}
[[sweep]]
name = "perm"
variants = ["ecmp/sr", {{label = "rps/ideal", seeds = [1, 2]}}]
{sweep}
[sweep.topology]
kind = "leaf_spine"
leaves = 2
spines = 2
hosts_per_leaf = 2
[sweep.workload]
kind = "permutation"
size = "64KB"

[[sweep]]
name = "hash"
analysis = "fat_tree_hash_uniformity"
axes = {{k = [4]}}

[[claim]]
id = "c1"
sweep = "perm"
metric = "completion_ps"
of = "rps/ideal"
compare = "<="
{claim}
[references.paper]
value = 0.2
unit = "pct"
source = "a paper"
{reference}"""


def study_file(
    top: str = "", sweep: str = "", claim: str = 'reference = "ecmp/sr"', reference: str = ""
) -> str:
    """A valid study file with lines added to its top level, first sweep, claim or reference."""
    return STUDY.format(top=top, sweep=sweep, claim=claim, reference=reference)


STUDY_CASES: dict[str, tuple[str, tuple[str, ...]]] = {
    # unknown keys, each listing the keys its own table takes
    "unknown_top_key": (study_file(top="colour = 1"), ("colour = 1", "unknown key", "name, title, template")),
    "unknown_sweep_key": (
        study_file(sweep="parallel = 2"),
        ("sweep[0].parallel = 2", "unknown key", "name, base, variants, seeds"),
    ),
    "unknown_claim_key": (
        study_file(claim='reference = "ecmp/sr"\nwhy = "x"'),
        ("claim[0].why = 'x'", "unknown key", "id, text, sweep, metric, of"),
    ),
    "unknown_reference_table_key": (
        study_file(claim='reference = {off = "ecmp/sr"}'),
        ("claim[0].reference.off = 'ecmp/sr'", "unknown key", "sweep, of, metric"),
    ),
    "unknown_literature_key": (
        study_file(reference="page = 3"),
        ("references.paper.page = 3", "unknown key", "value, low, high, unit, source"),
    ),
    # wrong types
    "title_a_number": (study_file(top="title = 3"), ("title = 3", "valid string")),
    "seeds_a_string": (
        study_file(sweep='seeds = "1"'),
        ("sweep[0].seeds = '1'", "non-empty list of distinct"),
    ),
    "factor_a_word": (
        study_file(claim='reference = "ecmp/sr"\nfactor = "big"'),
        ("claim[0].factor = 'big'", "valid number"),
    ),
    "value_true": (study_file(claim="value = true"), ("claim[0].value = True", "valid number")),
    "low_a_string": (
        study_file().replace("value = 0.2", 'low = "0.1"\nhigh = 0.3'),
        ("references.paper.low = '0.1'", "valid number"),
    ),
    "variant_a_number": (
        study_file().replace('variants = ["ecmp/sr",', "variants = [3,"),
        ("sweep[0].variants[0] = 3", 'a label or {label = "...", seeds = [...]}'),
    ),
    "for_each_a_number": (
        study_file(claim='reference = "ecmp/sr"\nfor_each = {v = 3}'),
        ("claim[0].for_each = {'v': 3}", "a table (or a list of tables) of name = string"),
    ),
    # bad values
    "statistic_unknown": (
        study_file(claim='reference = "ecmp/sr"\nstatistic = "average"'),
        ("claim[0].statistic = 'average'", "allowed: mean, median, min, max, each"),
    ),
    "tolerance_negative": (
        study_file(claim='reference = "ecmp/sr"\ntolerance = -1'),
        ("claim[0].tolerance = -1", "greater than or equal to 0"),
    ),
    "factor_infinite": (
        study_file(claim='reference = "ecmp/sr"\nfactor = inf'),
        ("claim[0].factor = inf", "finite number"),
    ),
    "reference_and_value": (
        study_file(claim='reference = "ecmp/sr"\nvalue = 1'),
        ("claim[0]: reference / value", "give exactly one"),
    ),
    "unit_unknown": (
        study_file().replace('unit = "pct"', 'unit = "percent"'),
        ("references.paper.unit = 'percent'", "allowed: ps, bps, bytes, pct"),
    ),
    "variant_scheme_unknown": (
        study_file().replace('"ecmp/sr",', '"ecpm/sr",'),
        ("sweep[0].variants[0] = 'ecpm/sr'", "unknown scheme 'ecpm'", "allowed: adaptive"),
    ),
    "variant_twice": (
        study_file().replace('"ecmp/sr",', '"rps/ideal",'),
        ("sweep[0].variants", "repeated label 'rps/ideal'"),
    ),
    "sweep_name_with_space": (
        study_file().replace('name = "perm"', 'name = "per m"'),
        ("sweep[0].name = 'per m'", "letters, digits, - and _"),
    ),
    "analysis_unknown": (
        study_file().replace('"fat_tree_hash_uniformity"', '"hash_uniformity"'),
        ("sweep[1].analysis = 'hash_uniformity'", "unknown analysis; allowed: ", "fat_tree_hash_uniformity"),
    ),
    "analysis_parameter_unknown": (
        study_file().replace("axes = {k = [4]}", "axes = {k = [4], radix = [2]}"),
        ("sweep[1]: axes.radix = [2]", "not a parameter of fat_tree_hash_uniformity; allowed: k"),
    ),
    "seed_axis_beside_variant_seeds": (
        study_file(sweep='axes = {"run.seed" = [1, 2]}'),
        ("sweep[0]: axes.run.seed = [1, 2]", "give seeds instead"),
    ),
}


def _one_error_line(code: int, output: str, expect: tuple[str, ...]) -> None:
    assert "Traceback" not in output, output
    assert code == 2, (code, output)
    lines = [line for line in output.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: input.toml: "), lines
    for text in expect:
        assert text in lines[0], (text, lines[0])


def test_the_valid_files_are_valid(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The files the cases break are valid as written: each case fails for its own key."""
    monkeypatch.chdir(tmp_path)
    assert len(Sweep.from_dict(sweep_file()).points) == 2
    (tmp_path / "page.md.j2").write_text("# {{ study.title }}\n")
    (tmp_path / "input.toml").write_text(study_file())
    study = Study.load(tmp_path / "input.toml")
    assert [len(s.points) for s in study.sweeps.values()] == [3, 1]
    assert [c.id for c in study.claims] == ["c1"]
    assert (study.references["paper"].low, study.references["paper"].high) == (0.2, 0.2)


@pytest.mark.parametrize("name", list(SWEEP_CASES))
def test_malformed_sweep_file_is_one_line(name: str, tmp_path: Path) -> None:
    content, expect = SWEEP_CASES[name]
    (tmp_path / "input.toml").write_text(tomli_w.dumps(content))
    done = invoke("sweep", "input.toml", "--dry-run", cwd=tmp_path)
    _one_error_line(done.returncode, done.stdout + done.stderr, expect)


@pytest.mark.parametrize("name", list(STUDY_CASES))
def test_malformed_study_file_is_one_line(name: str, tmp_path: Path) -> None:
    content, expect = STUDY_CASES[name]
    (tmp_path / "page.md.j2").write_text("# {{ study.title }}\n")
    (tmp_path / "input.toml").write_text(textwrap.dedent(content))
    done = invoke("study", "check", "input.toml", cwd=tmp_path)
    _one_error_line(done.returncode, done.stdout + done.stderr, expect)


def test_the_error_carries_key_value_and_allowed_as_a_scenario_error_does() -> None:
    """The Python API raises the scenario's exception type, with the first problem's key, value
    and allowed values (model.errors.Problem), so a notebook can act on them."""
    with pytest.raises(ScenarioError) as exc:
        Sweep.from_dict(sweep_file(parallel=4), source="s.toml")
    assert (exc.value.key, exc.value.value) == ("parallel", 4)
    assert exc.value.allowed is not None and exc.value.allowed.startswith("name, base, baseline, axes, ")


def test_axis_values_keep_their_types() -> None:
    """The schema checks axis values without converting them: an integer stays an integer, a table
    a table (the store's index, and load_sweep's columns, show them as the file gives them)."""
    sweep = Sweep.from_dict(
        sweep_file(
            axes={"run.seed": [1, 2], "lb": [{"scheme": "ecmp"}, {"scheme": "rps"}], "run.stop": ["time"]}
        )
    )
    assert sweep.axes == {
        "run.seed": [1, 2],
        "lb": [{"scheme": "ecmp"}, {"scheme": "rps"}],
        "run.stop": ["time"],
    }
    assert [type(v) for v in sweep.axes["run.seed"]] == [int, int]


def test_config_reference_lists_every_key_of_sweep_and_study_files() -> None:
    """docs/config-reference.md is generated from the schemas (test_docgen keeps it current):
    every key a sweep or study file takes has its row, each saying what it is."""
    from spraylab import docgen
    from spraylab.model.sweep import SweepKeys
    from spraylab.study import schema

    page = docgen.config_reference().splitlines()
    for prefix, model in (
        ("", SweepKeys),
        ("", schema.StudyFile),
        ("sweep[].", schema.StudySweepKeys),
        ("sweep[].variants[].", schema.Variant),
        ("claim[].", schema.ClaimTable),
        ("claim[].reference.", schema.ReferenceTable),
        ("references.NAME.", schema.ReferenceNumber),
    ):
        for key in model.model_fields:
            rows = [line for line in page if line.startswith(f"| `{prefix}{key}` |")]
            assert rows and all(row.split("|")[5].strip() for row in rows), (prefix, key)
