"""Command line: a thin layer over the Python API (parse, call, print)."""

from __future__ import annotations

import sys
import tomllib
from importlib import resources
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.table import Table

from spraylab.config import Scenario, ScenarioError
from spraylab.progress import RunProgress

app = typer.Typer(add_completion=False, no_args_is_help=True, help="spraylab: load balancing for AI-training networks.")
console = Console()
err_console = Console(stderr=True)

SetOption = Annotated[
    list[str] | None,
    typer.Option("--set", "-s", help="Override a scenario value: key=value, e.g. --set run.seed=2 --set lb.scheme=rps"),
]


class UsageError(Exception):
    """Bad command-line input: reported as one line, exit code 2."""


def parse_overrides(items: list[str] | None) -> dict[str, Any]:
    overrides: dict[str, Any] = {}
    for item in items or []:
        key, sep, raw = item.partition("=")
        if not sep or not key.strip():
            raise UsageError(f"--set {item!r}: expected key=value, e.g. --set run.seed=2")
        try:
            value: Any = tomllib.loads(f"v = {raw}")["v"]
        except tomllib.TOMLDecodeError:
            value = raw  # a bare word such as rps or 400Gbps
        overrides[key.strip()] = value
    return overrides


def preset_names() -> list[str]:
    return sorted(p.name.removesuffix(".toml") for p in resources.files("spraylab.presets").iterdir() if p.name.endswith(".toml"))


def load_scenario(path_or_preset: str, overrides: dict[str, Any]) -> Scenario:
    path = Path(path_or_preset)
    if not path.exists() and path_or_preset in preset_names():
        path = Path(str(resources.files("spraylab.presets") / f"{path_or_preset}.toml"))
    if not path.exists():
        raise UsageError(
            f"scenario {path_or_preset!r}: no such file or preset; presets: {', '.join(preset_names())}"
        )
    scenario = Scenario.load(path)
    return scenario.with_overrides(overrides) if overrides else scenario


def parse_variants(spec: str) -> list[tuple[str, dict[str, Any]]]:
    """``ecmp,rps,rps/ideal`` → labelled overrides; ``/RECOVERY`` also sets the RNIC mode."""
    from spraylab.lb.base import REGISTRY, load_builtin_schemes

    load_builtin_schemes()
    variants = []
    for item in (s.strip() for s in spec.split(",")):
        if not item:
            continue
        scheme, _, recovery = item.partition("/")
        if scheme not in REGISTRY:
            raise UsageError(f"--lb {item!r}: unknown scheme {scheme!r}; allowed: {', '.join(sorted(REGISTRY))}")
        overrides: dict[str, Any] = {"lb": {"scheme": scheme}}
        if recovery:
            if recovery not in ("gbn", "sr", "ideal"):
                raise UsageError(f"--lb {item!r}: unknown recovery {recovery!r}; allowed: gbn, sr, ideal")
            overrides["transport.recovery"] = recovery
        variants.append((item, overrides))
    if not variants:
        raise UsageError("--lb: give at least one scheme, e.g. --lb ecmp,rps")
    return variants


def variant_scenario(base: Scenario, overrides: dict[str, Any]) -> Scenario:
    data = base.to_dict()
    lb = overrides.get("lb")
    if lb is not None:
        data["lb"] = dict(lb)  # a new scheme starts from its own default parameters
    for key, value in overrides.items():
        if key != "lb":
            from spraylab.config import set_dotted

            set_dotted(data, key, value)
    from spraylab.config import validate

    return validate(data)


# --- output -------------------------------------------------------------------------

SUMMARY_ROWS: list[tuple[str, str, str]] = [
    ("flows done", "flows_completed", "int"),
    ("completion", "completion_ps", "time"),
    ("FCT mean", "fct_mean_ps", "time"),
    ("FCT p99", "fct_p99_ps", "time"),
    ("slowdown mean", "slowdown_mean", "float"),
    ("slowdown p99", "slowdown_p99", "float"),
    ("goodput/receiver", "goodput_bps", "rate"),
    ("retx ratio", "retx_ratio", "pct"),
    ("spurious retx ratio", "spurious_retx_ratio", "pct"),
    ("OOO discards", "discards", "int"),
    ("max reorder (pkts)", "max_reorder", "int"),
    ("drops", "drops", "int"),
    ("PFC pauses", "pfc_pauses", "int"),
    ("uplink imbalance max", "uplink_imbalance_max", "float"),
    ("stop", "stop_reason", "str"),
]


def fmt(value: Any, kind: str) -> str:
    from spraylab.units import format_rate, format_time

    if value is None:
        return "-"
    if kind == "time":
        return format_time(int(value))
    if kind == "rate":
        return format_rate(float(value))
    if kind == "pct":
        return f"{100 * float(value):.2f}%"
    if kind == "float":
        return f"{float(value):.3f}"
    return str(value)


def summary_table(title: str, summaries: dict[str, dict[str, Any]]) -> Table:
    table = Table(title=title, title_justify="left")
    table.add_column("metric")
    for label in summaries:
        table.add_column(label, justify="right")
    for name, key, kind in SUMMARY_ROWS:
        table.add_row(name, *(fmt(s.get(key), kind) for s in summaries.values()))
    return table


def run_one(scenario: Scenario, label: str = "") -> Any:
    from spraylab.experiment import run

    with RunProgress(scenario, label or scenario.name, enabled=scenario.run.progress) as progress:
        return run(scenario, progress=progress)


def compare_scenario(scenario: Scenario, variants: list[tuple[str, dict[str, Any]]], out: Path | None) -> dict[str, Any]:
    from spraylab.plots import slowdown_cdf, uplink_utilization

    results = {}
    for label, overrides in variants:
        results[label] = run_one(variant_scenario(scenario, overrides), label)
    console.print(summary_table(f"{scenario.name}: {len(variants)} schemes", {k: r.summary for k, r in results.items()}))
    if out is not None:
        out.mkdir(parents=True, exist_ok=True)
        for label, result in results.items():
            result.save(out / label.replace("/", "-"))
        p1 = slowdown_cdf(results, out / "fct_slowdown_cdf.png", f"{scenario.name}: FCT slowdown")
        p2 = uplink_utilization(results, out / "uplink_utilization.png", f"{scenario.name}: uplink utilization")
        console.print(f"results and plots in {out}/ ({p1.name}, {p2.name})")
    return results


# --- commands -----------------------------------------------------------------------


@app.command("run")
def run_command(
    scenario: Annotated[str, typer.Argument(help="Scenario TOML file or preset name")],
    set_: SetOption = None,
    out: Annotated[Path | None, typer.Option("--out", "-o", help="Save the result (Parquet + JSON) here")] = None,
) -> None:
    """Run one scenario and print its summary."""
    sc = load_scenario(scenario, parse_overrides(set_))
    result = run_one(sc)
    console.print(summary_table(sc.name, {sc.lb.scheme: result.summary}))
    target = out or (Path(sc.output.dir) if sc.output.dir else None)
    if target is not None:
        result.save(target)
        console.print(f"result saved in {target}/")


@app.command("compare")
def compare_command(
    scenario: Annotated[str, typer.Argument(help="Scenario TOML file or preset name")],
    lb: Annotated[str, typer.Option("--lb", help="Schemes to compare, e.g. ecmp,rps,rps/ideal (scheme/recovery)")] = "ecmp,rps",
    set_: SetOption = None,
    out: Annotated[Path | None, typer.Option("--out", "-o", help="Directory for results and PNG plots")] = None,
) -> None:
    """Run one scenario under several schemes: a table and plots (FCT-slowdown CDF, uplink utilization)."""
    sc = load_scenario(scenario, parse_overrides(set_))
    compare_scenario(sc, parse_variants(lb), out or Path("out") / f"compare-{sc.name}")


DEMO_VARIANTS = "ecmp,rps,rps/ideal"


@app.command("demo")
def demo_command(
    out: Annotated[Path, typer.Option("--out", "-o", help="Directory for results and PNG plots")] = Path("out/demo"),
    lb: Annotated[str, typer.Option("--lb", help="Schemes to compare")] = DEMO_VARIANTS,
) -> None:
    """Compare the load balancers on the default scenario (preset 'demo'): table + plots."""
    sc = load_scenario("demo", {})
    console.print(f"[bold]spraylab demo[/]: {sc.name}, {sc.topology.kind}; schemes {lb}")
    compare_scenario(sc, parse_variants(lb), out)


@app.command("list")
def list_command() -> None:
    """List schemes, topologies, workloads and presets."""
    from spraylab.config import FatTreeTopology, LeafSpineTopology, RailTopology, Workload
    from spraylab.lb.base import REGISTRY, load_builtin_schemes

    load_builtin_schemes()
    table = Table(title="load-balancing schemes (lb.scheme)", title_justify="left")
    for col in ("scheme", "acts at", "what it does", "parameters (defaults)"):
        table.add_column(col)
    for name in sorted(REGISTRY):
        cls = REGISTRY[name]
        params = ", ".join(f"{k}={v.default!r}" for k, v in cls.Params.model_fields.items()) or "-"
        table.add_row(name, cls.where, cls.summary, params)
    console.print(table)
    topo = Table(title="topologies (topology.kind)", title_justify="left")
    topo.add_column("kind")
    topo.add_column("keys")
    for model in (LeafSpineTopology, FatTreeTopology, RailTopology):
        topo.add_row(model.model_fields["kind"].default or "", ", ".join(k for k in model.model_fields if k != "kind"))
    console.print(topo)
    import typing

    work = Table(title="workloads (workload.kind)", title_justify="left")
    work.add_column("kind")
    work.add_column("keys")
    union = typing.get_args(typing.get_args(Workload)[0])
    for model in union:
        kind = typing.get_args(model.model_fields["kind"].annotation)[0]
        work.add_row(kind, ", ".join(k for k in model.model_fields if k != "kind"))
    console.print(work)
    from spraylab.workload.cdf import FlowSizeCdf

    console.print(f"flow-size distributions (workload.cdf): {', '.join(FlowSizeCdf.names())}")
    console.print(f"presets (use in place of a scenario file): {', '.join(preset_names())}")


def main() -> None:
    try:
        app(standalone_mode=False)
    except ScenarioError as exc:
        for line in exc.lines:
            err_console.print(f"error: {line}", markup=False, highlight=False)
        sys.exit(2)
    except UsageError as exc:
        err_console.print(f"error: {exc}", markup=False, highlight=False)
        sys.exit(2)
    except KeyboardInterrupt:
        err_console.print("interrupted")
        sys.exit(130)
    except typer.Exit as exc:
        sys.exit(exc.exit_code)
    except typer.Abort:
        sys.exit(1)
    except Exception as exc:  # click usage errors arrive here in non-standalone mode
        import click

        if isinstance(exc, click.ClickException):
            exc.show()
            sys.exit(exc.exit_code)
        raise


if __name__ == "__main__":
    main()
