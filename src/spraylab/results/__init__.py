"""What a run leaves behind: output directories and their markers, the results store and
its frames, provenance, the scenario card, result tables and their statistics."""
