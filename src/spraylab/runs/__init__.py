"""Running one scenario: build and run (:mod:`.experiment`), the event budget, progress,
interruption, the in-run monitor, and comparisons of several runs."""
