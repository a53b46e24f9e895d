"""Random GPU x GPU byte matrices of the families the RailS planner is checked on.

Every family moves about the same bytes as one Mixtral-8x7B dispatch with ``tokens_per_gpu``
tokens per GPU (top-2, 4096 x 2-byte hidden vectors: 8 KiB per (token, expert) pair), so the
families differ in *shape*, not in volume:

``zipf0``, ``zipf0.6``, ``zipf1.2``
    The MoE dispatch of :mod:`spraylab.workload.moe` with expert popularity ~ rank^-s.
``uniform``
    Each off-diagonal GPU pair sends a uniform random number of bytes in [0, 2 x mean].
``lognormal``
    Each pair sends mean x LogNormal(0, 1) / e^(1/2) bytes (heavy-tailed pairs).
``hot_server``
    ``uniform``, except that every GPU sends 4x as much to the GPUs of one random server.

The diagonal (a GPU to itself) is zero; same-server pairs stay (they travel NVLink).
"""

from __future__ import annotations

import numpy as np

from spraylab.workload import moe

FAMILIES = ("zipf0", "zipf0.6", "zipf1.2", "uniform", "lognormal", "hot_server")
HOT_FACTOR = 4


def family_matrix(
    family: str, n_servers: int, gpus_per_server: int, seed: int, tokens_per_gpu: int = 256
) -> np.ndarray:
    """One matrix of ``family`` (see the module docstring), deterministic given ``seed``."""
    if family not in FAMILIES:
        raise ValueError(f"family must be one of {', '.join(FAMILIES)}; got {family!r}")
    if family.startswith("zipf"):
        spec = moe.moe_spec_for(
            moe.MIXTRAL_8X7B, n_servers, gpus_per_server, tokens_per_gpu, zipf_s=float(family[4:]), seed=seed
        )
        return moe.dispatch_matrix(spec)
    g = n_servers * gpus_per_server
    preset = moe.MIXTRAL_8X7B
    mean = tokens_per_gpu * preset.top_k * preset.hidden * 2 / g  # bytes per GPU pair
    rng = np.random.default_rng(np.random.SeedSequence([seed, FAMILIES.index(family)]))
    if family == "lognormal":
        d1 = np.rint(mean * rng.lognormal(0.0, 1.0, size=(g, g)) / np.exp(0.5)).astype(np.int64)
    else:
        d1 = rng.integers(0, int(2 * mean) + 1, size=(g, g), dtype=np.int64)
        if family == "hot_server":
            hot = int(rng.integers(n_servers))
            d1[:, hot * gpus_per_server : (hot + 1) * gpus_per_server] *= HOT_FACTOR
    np.fill_diagonal(d1, 0)
    return d1
