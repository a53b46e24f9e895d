# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
# cython: initializedcheck=False, embedsignature=True
# distutils: language = c++
"""spraylab's compiled packet core: the event loop, packets, ports, switches, hosts and their
NICs, the queue pair's requester core and the built-in receivers.

One extension module so every step of a packet-hop is a direct C call: the loop pops an
arrival, the port runs it through its link's stages into the peer switch, the switch's
selector picks an egress, the egress port queues it and schedules the next arrival. Python
code sees ordinary classes (``spraylab.engine.simulator``, ``spraylab.net.packet``,
``spraylab.net.port``, ``spraylab.net.switch`` re-export them) and plugs in anywhere through
Python callables: events, link stages, selectors, ToR programs, hosts.
"""

import gc
from array import array  # int32 buffers for Switch.table's hand-made routes
import random
import time
from collections import deque
from heapq import heappop, heappush

from cpython.list cimport PyList_GET_ITEM, PyList_SetSlice
from cpython.pyport cimport PY_SSIZE_T_MAX
from cython.operator cimport dereference as deref, preincrement as inc
from cpython.ref cimport Py_DECREF, Py_INCREF, Py_XDECREF, PyObject
from libc.stdint cimport int32_t, int64_t, uint64_t
from libcpp.deque cimport deque as cdeque
from libcpp.unordered_map cimport unordered_map
from libcpp.utility cimport pair
from libcpp.vector cimport vector

from spraylab.net.drops import BEYOND_BITMAP, BUFFER, LINK_DOWN, NO_ROUTE, no_drops
from spraylab.net.framing import ACK_WIRE_BYTES, CNP_WIRE_BYTES, NACK_WIRE_BYTES
from spraylab.net.rates import kmin_span_ps, ps_per_byte

include "packet.pxi"
include "simulator.pxi"
include "port.pxi"
include "switch.pxi"
include "host.pxi"
include "qp.pxi"
include "cc_kernel.pxi"
include "cc_nscc.pxi"
include "cc_dcqcn.pxi"
include "cc_dctcp.pxi"
include "cc_swift.pxi"
include "cc_timely.pxi"
include "cc_hpcc.pxi"
include "sender_kernels.pxi"
include "receiver.pxi"
