"""Flow-level ("fluid") engine: exact max-min fair rates over the packet engine's routes (docs/fluid.md)."""
