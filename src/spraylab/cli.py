"""Command line: a thin layer over the Python API (parse, call, print)."""

from __future__ import annotations

import gc
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, TypeVar

import typer
from rich.console import Console
from rich.markup import escape  # rich.console imports it anyway

from spraylab.results.output import OutputError

# Start-up (``spraylab --help`` in well under a second): the scenario schema (pydantic), the
# engine, pandas, matplotlib and the rest load in the commands that use them.
if TYPE_CHECKING:
    from rich.table import Table

    from spraylab.model.scenario import Scenario

app = typer.Typer(
    add_completion=False,
    no_args_is_help=True,
    rich_markup_mode=None,
    help="spraylab: load balancing for AI-training networks.",
)
console = Console()
if not console.is_terminal:  # piped or captured output: room for several scheme columns
    console.width = 160
err_console = Console(stderr=True, soft_wrap=True)  # one problem, one line, whatever the width

AllowLargeOption = Annotated[
    bool,
    typer.Option(
        "--allow-large",
        help="Run even beyond the size guard's memory/flow/packet limits (= run.allow_large = true)",
    ),
]
EngineOption = Annotated[
    str | None,
    typer.Option(
        "--engine",
        help="packet (packet-level), fluid (flow-level max-min rates), l0 (bytes per link bound) or l0_rail (l0 of a rail workload from its byte matrices) (= run.engine)",
    ),
]
SetOption = Annotated[
    list[str] | None,
    typer.Option(
        "--set", "-s", help="Override a scenario value: key=value, e.g. --set run.seed=2 --set lb.scheme=rps"
    ),
]


FormatOption = Annotated[
    str,
    typer.Option(
        "--format",
        "-f",
        help="Output: table (terminal), csv, markdown or json; csv and json carry raw numbers (ps, bps, bytes)",
    ),
]


def check_format(fmt: str) -> str:
    from spraylab.table_formats import TABLE_FORMATS

    if fmt not in TABLE_FORMATS:
        raise UsageError(TABLE_FORMATS.unknown(fmt))
    return fmt


class UsageError(Exception):
    """Bad command-line input: reported as one line, exit code 2."""


def parse_overrides(
    items: list[str] | None, allow_large: bool = False, engine: str | None = None
) -> dict[str, Any]:
    import tomllib

    overrides: dict[str, Any] = {"run.allow_large": True} if allow_large else {}
    if engine is not None:
        overrides["run.engine"] = engine
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
    from importlib import resources

    return sorted(
        p.name.removesuffix(".toml")
        for p in resources.files("spraylab.presets").iterdir()
        if p.name.endswith(".toml")
    )


EXAMPLE_PREFIX = "example:"


def examples_dir() -> Path:
    """The example scenario files shipped in the package (the repository's scenarios/)."""
    from importlib import resources

    return Path(str(resources.files("spraylab") / "scenarios"))


def example_names(sweeps: bool = False) -> list[str]:
    """``core/permutation_ecmp``, ...: scenario files (or, with ``sweeps``, sweep files)."""
    root = examples_dir()
    names = [p.relative_to(root).with_suffix("").as_posix() for p in root.rglob("*.toml")]
    return sorted(n for n in names if n.startswith("sweeps/") == sweeps)


def example_path(name: str, sweeps: bool = False) -> Path:
    stem = name.removeprefix(EXAMPLE_PREFIX).removesuffix(".toml")
    if stem not in example_names(sweeps):
        kind = "sweep" if sweeps else "scenario"
        raise UsageError(
            f"{name!r}: no such example {kind}; examples: "
            + ", ".join(EXAMPLE_PREFIX + n for n in example_names(sweeps))
        )
    return examples_dir() / f"{stem}.toml"


def load_scenario(path_or_preset: str, overrides: dict[str, Any]) -> Scenario:
    from importlib import resources

    from spraylab.model.scenario import Scenario

    allow_large = overrides.get("run.allow_large") is True  # before the files are read
    if path_or_preset.startswith(EXAMPLE_PREFIX):
        scenario = Scenario.load(example_path(path_or_preset), allow_large)
        return scenario.with_overrides(overrides) if overrides else scenario
    path = Path(path_or_preset)
    if not path.exists() and path_or_preset in preset_names():
        path = Path(str(resources.files("spraylab.presets") / f"{path_or_preset}.toml"))
    if not path.exists():
        raise UsageError(
            f"scenario {path_or_preset!r}: no such file or preset; presets: {', '.join(preset_names())}"
        )
    from spraylab.model.scenario import Scenario

    scenario = Scenario.load(path, allow_large)
    return scenario.with_overrides(overrides) if overrides else scenario


def parse_variants(spec: str) -> list[tuple[str, dict[str, Any]]]:
    """``ecmp,rps/ideal,dfs[B=128]/sr`` → labelled overrides (:mod:`spraylab.model.variants`)."""
    from spraylab.model import variants

    try:
        return variants.parse_variants(spec)
    except variants.VariantError as exc:
        raise UsageError(str(exc)) from None


# --- output -------------------------------------------------------------------------


def summary_result(title: str, summaries: dict[str, dict[str, Any]], card: list[str] | None = None) -> Any:
    """The summary rows of one or more runs as a :class:`spraylab.results.tables.ResultTable`: the
    catalog's summary rows (:data:`spraylab.metrics.catalog.SUMMARY_ROWS`), then per group of a
    collective or MoE workload its completion time and bus bandwidth."""
    from spraylab.metrics.catalog import GROUP_FAMILIES, SUMMARY_ROWS, label_of, lookup, unit_of
    from spraylab.results.tables import ResultTable
    from spraylab.units import format_value

    def add(key: str) -> None:
        entry = lookup(key)
        unit = unit_of(key)
        show = entry.show if entry else None
        absent = entry.absent if entry else None
        values = [s.get(key) for s in summaries.values()]
        texts = [absent if v is None and absent is not None else format_value(v, unit, show) for v in values]
        table.add(label_of(key), key, unit, values, texts)

    table = ResultTable(title, list(summaries), card=list(card or []))
    for key in SUMMARY_ROWS:
        add(key)
    prefixes = tuple(f"{family}[" for family in GROUP_FAMILIES)
    group_keys = sorted({k for s in summaries.values() for k in s if k.startswith(prefixes)})
    if len(group_keys) == 1:  # one plain workload: its CCT is the completion row already
        group_keys = []
    for key in group_keys:
        add(key)
    table.extra["summaries"] = summaries
    return table


def summary_table(title: str, summaries: dict[str, dict[str, Any]]) -> Table:
    """The summary rows as one rich Table (all columns; the commands split wide ones)."""
    from rich.table import Table

    result = summary_result(title, summaries)
    table = Table(title=title, title_justify="left")
    table.add_column("metric")
    for label in summaries:
        table.add_column(
            escape(label), justify="right", overflow="fold"
        )  # labels like dfs[B=128] are not markup
    for row in result.rows:
        table.add_row(row.label, *row.texts)
    return table


def incomplete_lines(summaries: dict[str, dict[str, Any]]) -> list[str]:
    """One line per run stopped before its workload finished (exit code 3)."""
    from spraylab.units import format_time

    return [
        f"incomplete: {label}: stopped by {s.get('stop_reason')} at {format_time(int(s.get('sim_time_ps') or 0))} "
        f"with {s.get('flows_completed')}/{s.get('flows')} flows done; completed = false, and the FCT statistics "
        f"count the {s.get('flows_censored')} unfinished flows as censored (FCT at least the run's end)"
        for label, s in summaries.items()
        if not s.get("completed", True)
    ]


def exit_if_incomplete(summaries: dict[str, dict[str, Any]]) -> None:
    lines = incomplete_lines(summaries)
    for line in lines:
        err_console.print(line, markup=False, highlight=False)
    if lines:
        sys.exit(3)


def run_one(scenario: Scenario, label: str = "") -> tuple[Any, bool]:
    """The run's Result, and whether Ctrl-C ended it (then the Result is the part simulated so
    far, incomplete: :mod:`spraylab.runs.interrupt`)."""
    from spraylab.runs.experiment import run
    from spraylab.runs.interrupt import StopOnInterrupt
    from spraylab.runs.progress import RunProgress

    with (
        RunProgress(scenario, label or scenario.name, enabled=scenario.run.progress) as progress,
        StopOnInterrupt(progress) as guard,
    ):
        result = run(scenario, progress=guard)
    return result, guard.requested


def exit_interrupted(where: Path | None, what: str) -> None:
    """After Ctrl-C: say where the partial results are (or why none were saved); exit 130."""
    if where is not None:
        err_console.print(
            f"interrupted: {what} saved in {where}/ (marked incomplete: completed = false, stop_reason = interrupted)",
            markup=False,
            highlight=False,
        )
    else:
        err_console.print("interrupted: nothing was saved", markup=False, highlight=False)
    sys.exit(130)


def compare_scenario(
    scenario: Scenario,
    variants: list[tuple[str, dict[str, Any]]],
    out: Path | None,
    output_format: str = "table",
) -> dict[str, Any]:
    """``spraylab compare`` of a scenario (:func:`spraylab.runs.comparison.compare` with progress):
    the table, then the results and plots in ``out``."""
    from spraylab.results.output import check_target
    from spraylab.results.tables import render
    from spraylab.runs.comparison import compare, variant_scenarios

    variant_scenarios(scenario, variants)  # every variant validated before anything else
    if out is not None:
        check_target(out, "compare")  # before the runs, not after
    comparison = compare(scenario, variants, runner=lambda sc, label: run_one(sc, label))
    results = comparison.results
    title = f"{scenario.name}: {len(variants)} schemes"
    render(output_format, [summary_result(title, comparison.summaries, comparison.card.lines)], console)
    if out is not None:
        comparison.save(out)
        if comparison.interrupted:
            done = ", ".join(results)
            exit_interrupted(
                out, f"{len(results)} of {len(variants)} runs ({done}; the last one partial) and plots"
            )
        err_console.print(
            f"results and plots in {out}/ (fct_slowdown_cdf, uplink_utilization: PNG, PDF, SVG)",
            markup=False,
            highlight=False,
        )
    elif comparison.interrupted:
        exit_interrupted(None, "")
    return results


# --- commands -----------------------------------------------------------------------


@app.command("run")
def run_command(
    scenario: Annotated[str, typer.Argument(help="Scenario TOML file or preset name")],
    set_: SetOption = None,
    out: Annotated[
        Path | None, typer.Option("--out", "-o", help="Save the result (Parquet + JSON) here")
    ] = None,
    allow_large: AllowLargeOption = False,
    output_format: FormatOption = "table",
    engine: EngineOption = None,
) -> None:
    """Run one scenario and print its summary (with its scenario card). Exit code 3 if the run
    stopped (time limit, event or wall budget) before its workload finished."""
    from spraylab.results.card import card_lines_from_summary
    from spraylab.results.output import check_target, write_dir
    from spraylab.results.tables import render

    check_format(output_format)
    sc = load_scenario(scenario, parse_overrides(set_, allow_large, engine))
    target = out or (Path(sc.output.dir) if sc.output.dir else None)
    option = "--out" if out is not None else "output.dir ="
    if target is not None:
        check_target(target, "run", option)  # before the run, not after
    result, interrupted = run_one(sc)
    label = f"{sc.lb.scheme}/{sc.transport.recovery}"  # never the scheme without its recovery mode
    table = summary_result(sc.name, {label: result.summary}, card_lines_from_summary(result.summary))
    render(output_format, [table], console)
    if interrupted:  # Ctrl-C: the part simulated is saved, with --out or under out/
        target = target or Path("out") / f"{sc.name}-interrupted"
        try:
            write_dir(target, "run", result.write_files, option)
        except OutputError as exc:
            _error(str(exc))
            exit_interrupted(None, "")
        exit_interrupted(target, "the partial result")
    if target is not None:
        write_dir(target, "run", result.write_files, option)
        err_console.print(f"result saved in {target}/", markup=False, highlight=False)
    exit_if_incomplete({sc.name: result.summary})


@app.command("compare")
def compare_command(
    scenario: Annotated[
        str, typer.Argument(help="Scenario TOML file or preset name, or a sweep results directory")
    ],
    lb: Annotated[
        str | None,
        typer.Option(
            "--lb",
            help="Schemes to compare, e.g. ecmp,rps/ideal,dfs[reorder_bound_packets=64]/sr (scheme[params]/recovery)",
        ),
    ] = None,
    set_: SetOption = None,
    out: Annotated[
        Path | None, typer.Option("--out", "-o", help="Directory for results and PNG plots")
    ] = None,
    baseline: Annotated[
        str | None,
        typer.Option("--baseline", help="Sweep results: the column ratios are taken to, e.g. ecmp"),
    ] = None,
    by: Annotated[
        str | None,
        typer.Option(
            "--by",
            help="Sweep results: axes whose values are the columns (default lb.scheme), e.g. lb.scheme,transport.recovery",
        ),
    ] = None,
    metrics: Annotated[
        str | None,
        typer.Option("--metrics", help="Sweep results: summary keys to show, e.g. slowdown_p99,fct_mean_ps"),
    ] = None,
    allow_large: AllowLargeOption = False,
    output_format: FormatOption = "table",
    engine: EngineOption = None,
) -> None:
    """Run one scenario under several schemes (table + plots), or tabulate a sweep's results
    directory: metric x scheme, mean ± 95% CI over seeds, ratio to a baseline, grouped by the other axes."""
    check_format(output_format)
    if Path(scenario).is_dir():
        if lb is not None or set_ or out is not None or engine is not None:
            raise UsageError(
                f"{scenario}: --lb, --set, --out and --engine apply to a scenario, not to a sweep results directory"
            )
        compare_sweep(Path(scenario), baseline, _split(by), _split(metrics), output_format)
        return
    if baseline is not None or by is not None or metrics is not None:
        raise UsageError(
            "--baseline, --by and --metrics apply to a sweep results directory (see spraylab sweep)"
        )
    sc = load_scenario(scenario, parse_overrides(set_, allow_large, engine))
    results = compare_scenario(
        sc, parse_variants(lb or "ecmp,rps"), out or Path("out") / f"compare-{sc.name}", output_format
    )
    exit_if_incomplete({label: r.summary for label, r in results.items()})


def _split(text: str | None) -> list[str] | None:
    items = [item.strip() for item in (text or "").split(",") if item.strip()]
    return items or None


def compare_sweep(
    directory: Path,
    baseline: str | None,
    by: list[str] | None,
    metrics: list[str] | None,
    output_format: str = "table",
) -> None:
    from spraylab.report import ReportError
    from spraylab.report.result_tables import sweep_result_tables
    from spraylab.results.store import StoreError
    from spraylab.results.tables import render

    try:
        tables, notices = sweep_result_tables(
            directory, baseline, by, metrics, output_format in ("csv", "json")
        )
    except (ReportError, StoreError) as exc:
        raise UsageError(str(exc)) from None
    for line in notices:
        err_console.print(line, markup=False, highlight=False)
    render(output_format, tables, console)


# DFS twice: with the RNIC's loss recovery (the spec's rule 6) and with its own (docs/results.md section 4).
DEMO_VARIANTS = "ecmp,rps,rps/ideal,dfs/sr,dfs[loss_detection=dfs]/sr,tor_assist/sr,tor_assist/gbn"


@app.command("demo")
def demo_command(
    out: Annotated[Path, typer.Option("--out", "-o", help="Directory for results and PNG plots")] = Path(
        "out/demo"
    ),
    lb: Annotated[str, typer.Option("--lb", help="Schemes to compare")] = DEMO_VARIANTS,
) -> None:
    """Compare the load balancers on the default scenario (preset 'demo'): table + plots."""
    sc = load_scenario("demo", {})
    variants = parse_variants(lb)  # bad --lb: one error line, before the banner
    console.print(f"[bold]spraylab demo[/]: {sc.name}, {sc.topology.kind}; schemes {escape(lb)}")
    results = compare_scenario(sc, variants, out)
    exit_if_incomplete({label: r.summary for label, r in results.items()})


@app.command("validate")
def validate_command(
    out: Annotated[
        Path | None,
        typer.Option(
            "--out", "-o", help="Write the page here (e.g. docs/validation.md); default: print the verdicts"
        ),
    ] = None,
    only: Annotated[
        str | None,
        typer.Option(
            "--only",
            help="Comma-separated checks: sweeps of the validation study, e.g. incast,nscc_bottleneck (each section of docs/validation.md names its own; an unknown name lists them all)",
        ),
    ] = None,
    quick: Annotated[
        bool, typer.Option("--quick", help="Fewer and smaller cases (the study's profile quick)")
    ] = False,
    store: Annotated[
        Path | None,
        typer.Option("--store", help="Study store to run into (default out/study-validation[-quick])"),
    ] = None,
) -> None:
    """Run the packaged validation study (the simulator against closed-form truths and its
    targets: DCQCN, hash, RailS) and render the validation page. Exit code 1 if a claim is not met."""
    from spraylab.study.command import validate

    validate(out, _split(only), quick, store)


@app.command("list")
def list_command() -> None:
    """List schemes, topologies, workloads, rail strategies, transport modes and presets."""
    from rich.table import Table

    from spraylab.lb.base import REGISTRY, load_builtin_schemes
    from spraylab.topology.base import TOPOLOGIES
    from spraylab.transport.registry import cc_modes, cc_parameters, param_text, recovery_keys, recovery_modes
    from spraylab.workload.base import WORKLOADS
    from spraylab.workload.cdf import FlowSizeCdf
    from spraylab.workload.rail_strategies import STRATEGIES

    load_builtin_schemes()
    table = Table(title="load-balancing schemes (lb.scheme)", title_justify="left")
    for col in ("scheme", "acts at", "what it does", "parameters (defaults)"):
        table.add_column(col)
    for name in sorted(REGISTRY):
        cls = REGISTRY[name]
        params = ", ".join(f"{k}={v.default!r}" for k, v in cls.Params.model_fields.items()) or "-"
        table.add_row(name, cls.where, escape(cls.summary), escape(params))
    console.print(table)
    for title, registry in (
        ("topologies (topology.kind)", TOPOLOGIES),
        ("workloads (workload.kind)", WORKLOADS),
    ):
        kinds = Table(title=title, title_justify="left")
        for col in ("kind", "what it is", "keys"):
            kinds.add_column(col)
        for kind in registry.kinds():
            model = registry.models[kind]
            keys = ", ".join(k for k in model.model_fields if k != "kind")
            kinds.add_row(kind, escape(model.summary), escape(keys))
        console.print(kinds)
    strategies = Table(title="rail strategies (workload.strategy)", title_justify="left")
    strategies.add_column("strategy")
    strategies.add_column("what it does")
    for name, st in STRATEGIES.items():
        strategies.add_row(name, escape(st.summary))
    console.print(strategies)
    recoveries = Table(title="loss recovery (transport.recovery)", title_justify="left")
    for col in ("mode", "what it does", "[transport] keys it reads"):
        recoveries.add_column(escape(col))
    for name, summary in recovery_modes().items():
        recoveries.add_row(name, escape(summary), ", ".join(recovery_keys(name)))
    console.print(recoveries)
    ccs = Table(title="congestion control (transport.cc)", title_justify="left")
    for col in ("mode", "what it does", "parameters: name = default (unit)"):
        ccs.add_column(col)
    for name, summary in cc_modes().items():
        section, params = cc_parameters(name)
        text = "-"
        if section:
            text = f"[{section}] " + ", ".join(
                param_text(key, default, unit) for key, default, unit in params
            )
        ccs.add_row(name, escape(summary), escape(text))
    console.print(ccs)
    console.print(f"flow-size distributions (workload.cdf): {', '.join(FlowSizeCdf.names())}")
    console.print(f"presets (use in place of a scenario file): {', '.join(preset_names())}")
    examples = Table(title="example scenarios (spraylab run example:NAME)", title_justify="left")
    examples.add_column("name")
    examples.add_column("what it is")
    for name in example_names():
        examples.add_row(EXAMPLE_PREFIX + name, escape(_first_comment(examples_dir() / f"{name}.toml")))
    console.print(examples)
    sweeps = ", ".join(EXAMPLE_PREFIX + n for n in example_names(sweeps=True))
    console.print(f"example sweeps (spraylab sweep example:NAME): {sweeps}", highlight=False)
    console.print(f"(files in {examples_dir()})", highlight=False)


def _first_comment(path: Path) -> str:
    """The first comment line of a scenario file: what the example is."""
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.startswith("#") and line.strip("# ").strip():
            return line.strip("# ").strip()
        if line.strip() and not line.startswith("#"):
            break
    return ""


T = TypeVar("T")


def run_with_progress(call: Callable[[Any], T], progress: bool) -> T:
    """``call(display)`` with a progress display on stderr, SIGTERM ending it as Ctrl-C does (the
    store keeps what finished), and executor or store problems reported as one usage error.
    Shared by ``sweep`` and ``study run``."""
    import signal

    from spraylab.results.store import StoreError, StoreLocked
    from spraylab.sweeps.executors import ExecutorError
    from spraylab.sweeps.progress import SweepProgress

    def terminate(signum: int, frame: Any) -> None:
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGTERM, terminate)
    try:
        return call(SweepProgress(err_console, enabled=progress))
    except (ExecutorError, StoreLocked, StoreError) as exc:
        raise UsageError(str(exc)) from None
    finally:
        signal.signal(signal.SIGTERM, previous)


@app.command("sweep")
def sweep_command(
    sweep: Annotated[
        Path,
        typer.Argument(help="Sweep TOML file: a base scenario plus [axes]; or a study file (spraylab study)"),
    ],
    out: Annotated[
        Path | None, typer.Option("--out", "-o", help="Results store directory (default out/sweep-NAME)")
    ] = None,
    jobs: Annotated[
        int | None, typer.Option("--jobs", "-j", min=1, help="Runs at a time (default: CPU count)")
    ] = None,
    executor: Annotated[str, typer.Option("--executor", "-e", help="local (process pool) or ray")] = "local",
    address: Annotated[
        str | None,
        typer.Option(
            "--address", help="Ray cluster address (auto, ray://head:10001); default: start a local Ray"
        ),
    ] = None,
    force: Annotated[
        bool, typer.Option("--force", help="Rerun every point, even those complete in the store")
    ] = False,
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="Validate and list the points; run nothing")
    ] = False,
    progress: Annotated[bool, typer.Option("--progress/--no-progress", help="Show a progress bar")] = True,
    allow_large: AllowLargeOption = False,
    engine: EngineOption = None,
    reuse_other_versions: Annotated[
        bool,
        typer.Option(
            "--reuse-other-versions",
            help="Keep stored runs made by another spraylab version (default: rerun them)",
        ),
    ] = False,
) -> None:
    """Run a sweep (the cartesian product of its axes) into a resumable results store; an
    interrupted sweep reruns only the missing runs. Exit code 1 if a run failed, 3 if a run
    stopped before its workload finished (it is stored as incomplete)."""

    from spraylab.results.output import check_target
    from spraylab.results.store import Store, StoreError
    from spraylab.study.command import is_study_file
    from spraylab.study.command import run as run_study
    from spraylab.sweeps.executors import EXECUTORS
    from spraylab.sweeps.sweep import Sweep, plan, run_sweep

    if is_study_file(sweep):  # a study: its sweeps into one store (spraylab study run)
        run_study(sweep, out, jobs, executor, address, force, dry_run, progress, reuse_other_versions, None)
        return
    if executor not in EXECUTORS:
        raise UsageError(EXECUTORS.unknown(executor))
    if address and executor != "ray":
        raise UsageError("--address: only meaningful with --executor ray")
    if str(sweep).startswith(EXAMPLE_PREFIX):
        sweep = example_path(str(sweep), sweeps=True)
    definition = Sweep.load(sweep, allow_large=allow_large, engine=engine)
    target = out or Path("out") / f"sweep-{definition.name}"
    check_target(target, "sweep")
    try:
        planned = plan(definition, Store(target), force, reuse_other_versions)
    except StoreError as exc:
        raise UsageError(str(exc)) from None
    have = planned.have
    console.print(
        f"[bold]sweep {definition.name}[/]: {len(definition.points)} runs over "
        + ", ".join(f"{k} ({len(v)})" for k, v in definition.axes.items())
        + f"; {len(have)} already in {target}/"
    )
    if planned.other_version:
        verb = (
            "kept (--reuse-other-versions)"
            if reuse_other_versions
            else "rerun (keep them with --reuse-other-versions)"
        )
        console.print(
            f"{len(planned.other_version)} stored runs were made by another spraylab version: {verb}",
            highlight=False,
        )
    if dry_run:
        done_keys = {p.key for p in have}
        unfinished = {p.key for p in planned.incomplete}
        for point in definition.points:
            state = (
                "incomplete" if point.key in unfinished else "done" if point.key in done_keys else "to run"
            )
            console.print(f"  {point.key}  {state:<10}  {point.label}", markup=False, highlight=False)
        return

    outcome = run_with_progress(
        lambda display: run_sweep(
            definition, target, jobs=jobs, executor=executor, address=address, force=force, events=display,
            reuse_other_versions=reuse_other_versions,
        ),
        progress,
    )  # fmt: skip
    console.print(outcome.line(), markup=False, highlight=False)
    if outcome.failed:
        console.print(
            f"failed runs are recorded in {target}/runs/<key>/error.json and rerun by the next sweep",
            highlight=False,
        )
    console.print(
        f"results in {target}/: spraylab compare {target}; spraylab report {target}", highlight=False
    )
    if outcome.interrupted:
        sys.exit(130)
    if outcome.failed:
        sys.exit(1)  # (typer.Exit would only become app()'s return value in main())
    if outcome.any_incomplete:
        err_console.print(
            "incomplete runs (stopped before their workload finished) are stored apart; they rerun when their "
            "budget changes or with --force",
            markup=False, highlight=False,
        )  # fmt: skip
        sys.exit(3)


@app.command("report")
def report_command(
    directory: Annotated[Path, typer.Argument(help="A sweep results directory")],
    out: Annotated[
        Path | None, typer.Option("--out", "-o", help="Report directory (default DIR/report)")
    ] = None,
    baseline: Annotated[
        str | None, typer.Option("--baseline", help="The column ratios are taken to, e.g. ecmp")
    ] = None,
    by: Annotated[
        str | None, typer.Option("--by", help="Axes whose values are the columns (default lb.scheme)")
    ] = None,
) -> None:
    """Write PNG plots (FCT-slowdown CDF, slowdown by size, CCT/busbw, uplink heatmap, reorder CDF)
    and a self-contained report.html for a sweep's results."""
    from spraylab.report import ReportError, build_report
    from spraylab.results.store import StoreError

    if not directory.is_dir():
        raise UsageError(f"{directory}: no such directory (give a sweep results directory)")
    try:
        report = build_report(directory, out, _split(by), baseline)
    except (ReportError, StoreError) as exc:
        raise UsageError(str(exc)) from None
    console.print(f"{len(report.plots)} plots and {report.html} written", highlight=False)


@app.command("import")
def import_command(
    tool: Annotated[str, typer.Argument(help="The simulator the files come from: htsim or ns3")],
    topology: Annotated[
        Path | None,
        typer.Option("--topology", "-t", help="htsim .topo fat-tree description, or ns-3 topology.txt"),
    ] = None,
    flows: Annotated[
        Path | None, typer.Option("--flows", "-w", help="htsim connection matrix (.cm), or ns-3 flow.txt")
    ] = None,
    out: Annotated[
        Path | None, typer.Option("--out", "-o", help="Scenario file to write (default: print it)")
    ] = None,
    base: Annotated[
        str | None,
        typer.Option(
            "--base", help="A scenario file or preset for the other sections (and a topology or flows)"
        ),
    ] = None,
    ignore: Annotated[
        str | None,
        typer.Option(
            "--ignore", help="htsim keys to read and drop, e.g. Queue_Up,Queue_Down (= topology.ignore)"
        ),
    ] = None,
    config: Annotated[
        Path | None,
        typer.Option(
            "--config",
            "-c",
            help="ns3: HPCC's config.txt; its payload size, buffer and stop time carry over, the rest is noted",
        ),
    ] = None,
    set_: SetOption = None,
) -> None:
    """Write a scenario that runs an htsim or ns-3 topology and flow file as they are. Every
    line is checked now; a field spraylab cannot model is an error naming its line, and each
    setting of the peer's run that does not carry over is a note."""
    import tomli_w

    from spraylab.formats.importer import import_scenario, read_base
    from spraylab.formats.importers import IMPORT_TOOLS
    from spraylab.results.card import scenario_card

    if tool not in IMPORT_TOOLS:
        raise UsageError(f"import {tool!r}: unknown simulator; allowed: {', '.join(IMPORT_TOOLS.names())}")
    if topology is None and flows is None:
        raise UsageError(f"import {tool}: give --topology and/or --flows")
    if out is not None and out.exists():
        raise UsageError(f"--out {out}: exists; refusing to overwrite it (remove it or choose another name)")
    base_data = None
    if base is not None:
        base_data = read_base(str(example_path(base)) if base.startswith(EXAMPLE_PREFIX) else base)
    data, scenario, notes = import_scenario(
        tool, topology, flows, out, base_data, _split(ignore), parse_overrides(set_), config
    )
    text = tomli_w.dumps(data)
    header = (
        f"# Imported from {tool} by spraylab import.\n# "
        + "\n# ".join(scenario_card(scenario).lines)
        + "\n\n"
    )
    for note in notes:
        err_console.print(f"note: {note}", markup=False, highlight=False)
    if out is None:
        sys.stdout.write(header + text)
        return
    tmp = out.with_name(f".{out.name}.tmp")
    tmp.write_text(header + text, encoding="utf-8")
    tmp.replace(out)
    err_console.print(f"scenario written to {out}: spraylab run {out}", markup=False, highlight=False)


@app.command("export")
def export_command(
    result: Annotated[Path, typer.Argument(help="A run's result directory (spraylab run --out DIR)")],
    layout: Annotated[
        str, typer.Option("--format", "-f", help="fct (HPCC ns-3 fct.txt) or htsim (per-flow finish lines)")
    ] = "fct",
    out: Annotated[Path | None, typer.Option("--out", "-o", help="File to write (default: print)")] = None,
) -> None:
    """Write a run's per-flow results as ns-3's fct.txt or htsim's finish lines."""
    from spraylab.formats.export import EXPORT_LAYOUTS, ExportError, export
    from spraylab.metrics.result import Result

    if layout not in EXPORT_LAYOUTS:
        raise UsageError(EXPORT_LAYOUTS.unknown(layout))
    if out is not None and out.exists():
        raise UsageError(f"--out {out}: exists; refusing to overwrite it")
    try:
        loaded = Result.load(result)
    except FileNotFoundError as exc:
        raise UsageError(str(exc)) from None
    try:
        exported = export(loaded.flows, loaded.scenario, layout)
    except ExportError as exc:
        raise UsageError(str(exc)) from None
    if exported.left_out:
        err_console.print(
            f"note: {exported.left_out} flows were not acknowledged to their senders (unfinished) and are not listed",
            markup=False,
            highlight=False,
        )
    err_console.print(f"note: ids are {exported.ids}", markup=False, highlight=False)
    if out is None:
        sys.stdout.write(exported.text)
    else:
        out.write_text(exported.text, encoding="utf-8")


@app.command("docs")
def docs_command(
    page: Annotated[
        str, typer.Argument(help="config (configuration reference) or columns (column dictionary)")
    ],
) -> None:
    """Print a generated documentation page (docs/config-reference.md, docs/columns.md)."""
    from spraylab import docgen

    pages = {"config": docgen.config_reference, "columns": docgen.column_dictionary}
    if page not in pages:
        raise UsageError(f"docs {page!r}: unknown page; allowed: {', '.join(pages)}")
    sys.stdout.write(pages[page]())


@app.command("view")
def view_command(
    run: Annotated[
        Path, typer.Argument(help="A run's result directory (spraylab run --out, or a store run)")
    ],
    out: Annotated[Path | None, typer.Option("--out", "-o", help="The page (default RUN.html)")] = None,
) -> None:
    """Write one self-contained, interactive HTML page of a run (works offline): link x time
    utilization by tier, queue and rate traces, a flow timeline and the scenario card. The time
    series need a run made with a [monitor] section."""
    from spraylab.report.viewer import ViewError, write_view

    if not run.is_dir():
        raise UsageError(f"{run}: no such directory (give a run's result directory)")
    try:
        page = write_view(run, out)
    except ViewError as exc:
        raise UsageError(str(exc)) from None
    console.print(f"{page} written", highlight=False)


def _add_study_commands() -> None:
    from spraylab.study.command import study_app

    app.add_typer(study_app, name="study")


_add_study_commands()


def _error(message: str) -> None:
    err_console.print(f"error: {' '.join(message.split())}", markup=False, highlight=False)


class _NotRaised(Exception):
    """Stands for ScenarioError while the schema module is not loaded (it cannot have raised)."""


def _scenario_error() -> tuple[type[Exception], ...]:
    """``spraylab.model.scenario.ScenarioError`` and ``spraylab.formats.rows.FormatError`` without
    importing the schema or the readers just to catch them (unloaded, they cannot have raised)."""
    config = sys.modules.get("spraylab.model.scenario")
    rows = sys.modules.get("spraylab.formats.rows")
    return (
        config.ScenarioError if config is not None else _NotRaised,
        rows.FormatError if rows is not None else _NotRaised,
    )


def main() -> None:
    """The ``spraylab`` command. Bad input of any kind (scenario, sweep, options, files) ends
    with one ``error:`` line and exit code 2, never a traceback."""
    try:
        # Non-standalone mode hands back a typer.Exit's code instead of exiting.
        code = app(standalone_mode=False)
        # The interpreter's last garbage collection at exit walks every object the command
        # left (a run's network: ports, queue pairs, their per-packet lists), 8% of a 1024-host
        # run's CPU, to find nothing that needs it: everything is written. Frozen, they are
        # skipped (memory goes back to the system with the process).
        gc.freeze()
        sys.exit(code if isinstance(code, int) else 0)
    except _scenario_error() as exc:
        for line in exc.lines:
            err_console.print(f"error: {line}", markup=False, highlight=False)
        sys.exit(2)
    except (UsageError, OutputError) as exc:
        _error(str(exc))
        sys.exit(2)
    except KeyboardInterrupt:
        err_console.print("interrupted")
        sys.exit(130)
    except typer.Abort:
        sys.exit(1)
    except UnicodeDecodeError as exc:
        _error(f"input is not UTF-8 text (byte {exc.object[exc.start]:#04x} at offset {exc.start})")
        sys.exit(2)
    except OSError as exc:  # a path given on the command line that cannot be read or written
        where = f"{exc.filename}: " if exc.filename else ""
        _error(f"{where}{exc.strerror or exc}")
        sys.exit(2)
    except Exception as exc:
        # Click's usage errors (unknown option, missing argument, bad --jobs), from whichever
        # click typer uses (recent typers vendor their own): one line instead of usage + box.
        message = getattr(exc, "format_message", None)
        if message is None or not hasattr(exc, "exit_code"):
            raise
        ctx = getattr(exc, "ctx", None)
        command = f"{ctx.command_path}: " if ctx is not None else ""
        _error(command + message() + _usage_detail(exc, ctx))
        sys.exit(exc.exit_code or 2)


def _usage_detail(exc: Exception, ctx: Any) -> str:
    """What click's message leaves out: the value given for a bad option, the commands allowed."""
    param = getattr(exc, "param", None)
    opts = getattr(param, "opts", None) or []
    args = sys.argv[1:]
    for i, arg in enumerate(args):
        for opt in opts:
            if arg == opt and i + 1 < len(args):
                return f" (got {args[i + 1]!r})"
            if arg.startswith(opt + "="):
                return f" (got {arg[len(opt) + 1 :]!r})"
    if "No such command" in str(getattr(exc, "message", "")) and ctx is not None:
        return f" Commands: {', '.join(ctx.command.list_commands(ctx))}"
    return ""


if __name__ == "__main__":
    main()
