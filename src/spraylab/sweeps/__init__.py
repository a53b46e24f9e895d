"""Sweeps: a base scenario plus axes (:mod:`.sweep`), run by an executor into a results
store, with progress over the whole sweep."""
