"""The differential reference: random valid scenarios (every scheme, recovery mode, CC, lossless
on and off, link events, every workload kind; ``test_properties.scenarios``) with the hash of
each one's summary, flows and links tables as the pure-Python packet engine computed them
before the compiled core replaced it (``ef4c7ca``).

The scenarios are stored with their hashes, so the reference does not depend on which examples
a later hypothesis version would draw. ``tests/test_differential.py`` runs each one on the
engine of this tree and requires the same hash: the compiled core reproduces the Python engine
to the bit on scenarios nobody chose by hand.

    PYTHONPATH=<src of the reference engine> python tests/differential.py --update [--count N]

writes ``tests/differential.json`` (a deliberate model change, like a fingerprint change,
regenerates it in its own commit from the engine that makes the change).
"""

from __future__ import annotations

import argparse
import copy
import hashlib
import json
import sys
from pathlib import Path
from typing import Any

STORE = Path(__file__).with_name("differential.json")
# summary keys that describe the host or the code version, not the simulation
SKIP_KEYS = {"wall_s", "card", "engine"}


def result_hash(scenario: dict[str, Any]) -> str:
    """sha256 (16 hex digits) of a run's summary (less timing and version keys) and its flows
    and links tables."""
    from spraylab.results.provenance import VERSION_KEYS
    from spraylab.results.store import TIMING_KEYS
    from spraylab.runs.experiment import run

    result = run(copy.deepcopy(scenario))
    skip = {*TIMING_KEYS, *VERSION_KEYS, *SKIP_KEYS}
    summary = {k: v for k, v in result.summary.items() if k not in skip}
    digest = hashlib.sha256(json.dumps(summary, sort_keys=True, default=repr).encode())
    digest.update(result.flows.to_csv(index=False).encode())
    digest.update(result.links.to_csv(index=False).encode())
    return digest.hexdigest()[:16]


def draw_scenarios(count: int) -> list[dict[str, Any]]:
    """``count`` distinct scenarios from the property test's strategy (derandomized)."""
    from hypothesis import HealthCheck, Phase, given, settings
    from test_properties import scenarios

    drawn: list[dict[str, Any]] = []
    seen: set[str] = set()

    @settings(
        max_examples=count * 3,
        derandomize=True,
        database=None,
        deadline=None,
        phases=[Phase.generate],
        suppress_health_check=list(HealthCheck),
    )
    @given(scenarios())
    def collect(data: dict[str, Any]) -> None:
        key = json.dumps(data, sort_keys=True)
        if key not in seen and len(drawn) < count:
            seen.add(key)
            drawn.append(copy.deepcopy(data))

    collect()
    return drawn


def stored() -> list[dict[str, Any]]:
    return json.loads(STORE.read_text()) if STORE.exists() else []


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--update", action="store_true", help="draw the scenarios and store their hashes")
    parser.add_argument("--count", type=int, default=120)
    args = parser.parse_args(argv)
    if args.update:
        cases = [{"scenario": s, "hash": result_hash(s)} for s in draw_scenarios(args.count)]
        STORE.write_text(json.dumps(cases, indent=None, sort_keys=True) + "\n")
        print(f"wrote {len(cases)} scenarios to {STORE}")
        return 0
    changed = [i for i, case in enumerate(stored()) if result_hash(case["scenario"]) != case["hash"]]
    print(f"{len(changed)} of {len(stored())} changed: {changed}")
    return 1 if changed else 0


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).parent))
    sys.exit(main(sys.argv[1:]))
