"""spray_rr's entropies for every flow of a fluid run at once: the values ``n_flows`` successive
calls of ``rng.sample(range(1 << 16), paths)`` return (the packet engine's draw at each flow's
start, ``lb/spray_rr.py``), without a Python call per value.

``random.Random.sample`` takes ``k`` distinct values of a population of ``n`` by drawing an
index below ``n`` (``_randbelow``: ``getrandbits(n.bit_length())``, drawn again while ``>= n``)
and drawing again while the index was already taken in this sample, as long as a set of ``k``
is smaller than the population (CPython ``Lib/random.py``, ``Random.sample``: ``n > setsize``;
for ``n = 65,536`` up to ``k = 5,461``). ``getrandbits(17)`` is one 32-bit Mersenne Twister
output shifted right by 15, and ``getrandbits(32 * m)`` is the next ``m`` outputs as the
little-endian words of one integer (CPython ``Modules/_randommodule.c``,
``_random_Random_getrandbits_impl``). So a block of outputs, shifted, with the values ``>= n``
dropped, is the stream of indices the samples draw from; a sample takes the next ``k`` of them
unless one repeats an earlier one of the same sample, which is then skipped.

The generator ends past the last output used (the block is drawn whole): the fluid engine draws
nothing else from this stream. Anything else (another generator class, ``k`` past the set
regime) takes the samples one by one.
"""

from __future__ import annotations

import math
import random

import numpy as np

__all__ = ["spray_entropies"]

POPULATION = 1 << 16  # spray_rr's entropies: 16-bit values (lb/spray_rr.py)
INDEX_BITS = POPULATION.bit_length()  # _randbelow's getrandbits width: 17
WORD_BITS = 32  # one Mersenne Twister output


def _set_regime(k: int, n: int) -> bool:
    """Whether ``Random.sample`` draws ``k`` of ``n`` by rejection against a set (its test)."""
    setsize = 21
    if k > 5:
        setsize += 4 ** math.ceil(math.log(k * 3, 4))
    return n > setsize


def spray_entropies(rng: random.Random, n_flows: int, paths: int) -> list[list[int]]:
    """``[rng.sample(range(1 << 16), paths) for _ in range(n_flows)]`` (module doc)."""
    if type(rng) is not random.Random or not 0 < paths <= POPULATION or not _set_regime(paths, POPULATION):
        return [rng.sample(range(POPULATION), paths) for _ in range(n_flows)]
    out: list[list[int]] = []
    index = np.zeros(0, dtype=np.int64)  # the indices drawn and not used yet
    while len(out) < n_flows:
        # about two outputs per index (half are >= 2^16 and drawn again), plus slack
        need = 2 * (n_flows - len(out)) * paths + 64
        words = np.frombuffer(rng.getrandbits(WORD_BITS * need).to_bytes(4 * need, "little"), dtype="<u4")
        drawn = (words >> (WORD_BITS - INDEX_BITS)).astype(np.int64)
        index = np.concatenate([index, drawn[drawn < POPULATION]])
        used = _take(index, n_flows, paths, out)
        index = index[used:]
    return out


def _take(index: np.ndarray, n: int, k: int, out: list[list[int]]) -> int:
    """Append samples of ``k`` drawn from the index stream ``index`` to ``out`` until it has
    ``n`` (or the stream runs out); how many indices they used."""
    pos = 0
    while len(out) < n and pos < len(index):
        # the samples that use k indices in a row (no repeat within one), checked all at once
        whole = min(n - len(out), (len(index) - pos) // k)
        if whole:
            block = index[pos : pos + whole * k].reshape(whole, k)
            ordered = np.sort(block, axis=1)
            repeats = (ordered[:, 1:] == ordered[:, :-1]).any(axis=1)
            clean = int(np.argmax(repeats)) if repeats.any() else whole
            out.extend(block[:clean].tolist())
            pos += clean * k
            if clean == whole:
                continue
        # one sample with a repeat (or too few indices left for a whole one): index by index
        chosen: list[int] = []
        seen: set[int] = set()
        j = pos
        while len(chosen) < k and j < len(index):
            v = int(index[j])
            j += 1
            if v not in seen:
                seen.add(v)
                chosen.append(v)
        if len(chosen) < k:
            break  # the block ran out mid-sample: draw more, then take it again
        out.append(chosen)
        pos = j
    return pos
