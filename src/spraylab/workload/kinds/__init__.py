"""Workload kinds, one module each; every module registers its section with
:func:`spraylab.workload.base.register` on import (see :data:`spraylab.workload.base.WORKLOADS`)."""
