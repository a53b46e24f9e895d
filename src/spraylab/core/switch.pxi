# A switch: per-destination equal-cost egress candidates, a load balancer picks one.


NO_PORT_LIMIT = 1 << 62
cdef int64_t C_NO_PORT_LIMIT = NO_PORT_LIMIT


cdef class SharedBuffer:
    """A switch's shared packet buffer with a dynamic per-port threshold (Choudhury-Hahne):
    a port may queue at most ``alpha * (capacity - used)``.

    Summing every port's backlog on each packet would cost O(ports) per hop. Under dynamic
    thresholds the buffer never fills beyond ``capacity * alpha*n / (1 + alpha*n)``, so a port
    whose backlog stays below ``alpha * capacity / (1 + alpha*n)`` is always admitted; only
    longer queues pay for the exact check (``safe_port_bytes``). That check first tries an upper
    bound of ``used``: its last exact value plus every byte the switch's ports accepted since
    (``added_bytes``; queues only drain in between). Only when the bound does not admit the
    packet is the sum taken again, so every decision is the one the exact sum gives.

    A ToR program that holds packets (ToR-assisted spraying's resequencing rings) holds them in
    this buffer: ``held_bytes`` counts in ``used`` for every port's admission, and the holds
    are one more queue under the same threshold (``add_hold_queue``, ``admits_hold``), so the
    bound above still holds with that queue counted."""

    cdef public int64_t capacity_bytes, hold_queues, held_bytes, safe_port_bytes
    cdef public int64_t used_bytes_then, added_bytes
    # A static cap on each port's queue as well (switch.port_buffer; htsim's per-queue maxsize),
    # NO_PORT_LIMIT when none; packet_bytes_max is the largest packet it must leave room for.
    cdef public int64_t port_limit_bytes, packet_bytes_max
    cdef public double alpha
    cdef public list ports

    def __init__(self, int64_t capacity_bytes, double alpha) -> None:
        self.capacity_bytes = capacity_bytes
        self.alpha = alpha
        self.ports = []
        self.hold_queues = 0
        self.held_bytes = 0  # held by the switch's ToR program (hold / unhold)
        self.safe_port_bytes = capacity_bytes
        self.used_bytes_then = 0
        self.added_bytes = 0
        self.port_limit_bytes = C_NO_PORT_LIMIT
        self.packet_bytes_max = 0

    def set_port_limit(self, int64_t limit_bytes, int64_t packet_bytes_max) -> None:
        """Cap every port's queue at ``limit_bytes`` too: a packet that would take a port's
        backlog beyond it is refused whatever the shared buffer's threshold says (as a queue
        of fixed size does: uet-htsim's switch queues). ``packet_bytes_max`` is the largest
        packet: the fast path admits without the exact check only below the cap minus it."""
        self.port_limit_bytes = limit_bytes
        self.packet_bytes_max = packet_bytes_max
        self._set_safe()

    def add_port(self, Port port) -> None:
        self.ports.append(port)
        self._set_safe()

    def add_hold_queue(self) -> None:
        """A ToR program will hold packets here (one queue under the dynamic threshold)."""
        self.hold_queues += 1
        self._set_safe()

    def _set_safe(self) -> None:
        n = len(self.ports) + self.hold_queues
        self.safe_port_bytes = <int64_t>(self.alpha * self.capacity_bytes / (1 + self.alpha * n))
        if self.port_limit_bytes != C_NO_PORT_LIMIT:
            self.safe_port_bytes = min(self.safe_port_bytes, self.port_limit_bytes - self.packet_bytes_max)

    cpdef int64_t used_bytes(self):
        cdef int64_t used = self.held_bytes
        cdef Port port
        for port in self.ports:
            used += port.queue_bytes()
        return used

    def admits_hold(self, int64_t size) -> bool:
        """May the switch's program hold ``size`` more bytes (the dynamic threshold, as a port)?"""
        held = self.held_bytes
        return held <= self.safe_port_bytes or self.admits(None, held, size)

    def hold(self, int64_t size) -> None:
        self.held_bytes += size
        self.added_bytes += size  # ``used`` grew: the upper bound of ``admits`` must see it

    def unhold(self, int64_t size) -> None:
        self.held_bytes -= size

    cpdef bint admits(self, Port port, int64_t backlog, int64_t size):
        """May a queue of ``backlog`` bytes (a port's, or the holds' for ``port`` None) take
        ``size`` more?"""
        cdef int64_t limit = backlog + size
        if port is not None and limit > self.port_limit_bytes:
            return False
        # + one byte per port: each port's backlog is rounded down to whole bytes
        cdef int64_t bound = self.used_bytes_then + self.added_bytes + len(self.ports)
        if limit <= self.alpha * (self.capacity_bytes - bound):
            return True
        cdef int64_t used = self.used_bytes()
        self.used_bytes_then = used
        self.added_bytes = 0
        return limit <= self.alpha * (self.capacity_bytes - used)


cdef class Selector:
    """A switch-side load balancer compiled into the core: ``choose`` picks the egress among
    a packet's equal-cost candidates (two or more) without a Python call. Calling the object
    does the same from Python (``selector(switch, pkt, cands)``), so a built-in selector and a
    plain Python function ``(switch, pkt, cands) -> Port`` are interchangeable as
    ``Switch.select``."""

    cdef object choose(self, Switch switch, Packet pkt, object cands):
        raise NotImplementedError

    def __call__(self, Switch switch, Packet pkt, cands) -> Port:
        return self.choose(switch, pkt, cands)


cdef inline uint64_t c_hop_hash(uint64_t pkt_hash, uint64_t seed) noexcept nogil:
    # spraylab.net.routes.hop_hash (the splitmix64 finalizer of pkt_hash ^ seed), in uint64
    cdef uint64_t z = pkt_hash ^ seed
    z = (z ^ (z >> 30)) * <uint64_t>0xBF58476D1CE4E5B9
    z = (z ^ (z >> 27)) * <uint64_t>0x94D049BB133111EB
    return z ^ (z >> 31)


cdef class HashSelect(Selector):
    """ECMP: the switch's seeded hash of the packet's header hash (``routes.hop_hash``)."""

    cdef object choose(self, Switch switch, Packet pkt, object cands):
        cdef Py_ssize_t n = PyList_GET_SIZE(cands)
        return <object>PyList_GET_ITEM(cands, <Py_ssize_t>(c_hop_hash(pkt.hash, switch.salt) % <uint64_t>n))


cdef class UniformSelect(Selector):
    """A uniformly random candidate per packet: ``cands[int(random() * n)]``, drawing from
    ``random`` (a ``random.Random``'s bound ``random``), the draw the Python form makes."""

    cdef readonly object random

    def __init__(self, random) -> None:
        self.random = random

    cdef object choose(self, Switch switch, Packet pkt, object cands):
        cdef Py_ssize_t n = PyList_GET_SIZE(cands)
        cdef double draw = self.random()
        return <object>PyList_GET_ITEM(cands, <Py_ssize_t>(draw * n))


ecmp_select = HashSelect()


cdef class Switch:
    """Forwards by destination host: ``table[dst]`` is the route group (the equal-cost egress
    ports, see ``spraylab.net.routes``).

    ``select`` is the load balancer's per-packet choice (ECMP unless a scheme installs its
    own): a compiled :class:`Selector` or any Python callable ``(switch, pkt, cands) -> Port``.
    A ToR ``program`` (ToR-assisted spraying, flowlets) sees every packet first and returns
    False when it consumed (held or dropped) the packet."""

    cdef public Simulator sim
    cdef public object name, program, hosts, ports, uplinks
    cdef public int index, tier
    cdef public uint64_t salt
    cdef list _table
    cdef public SharedBuffer buffer
    cdef object _select
    cdef Selector _compiled_select

    def __init__(self, sim, name, int index, int tier, uint64_t salt) -> None:
        self.sim = sim
        self.name = name
        self.index = index
        self.tier = tier  # 1 = ToR/leaf/edge/rail leaf, 2 = spine/agg, 3 = core, 0 = NVLink switch
        self.salt = salt
        self.ports = []
        self.uplinks = []
        self.table = []
        self.select = ecmp_select
        self.program = None
        self.buffer = None
        self.hosts = []  # hosts attached directly (ToRs)

    @property
    def table(self) -> list:
        """``table[dst]``: the route group (a list of egress ports) toward host ``dst``."""
        return self._table

    @table.setter
    def table(self, table: list) -> None:
        if any(not isinstance(group, list) for group in table):
            raise TypeError("Switch.table: every entry must be a list of ports (a RouteGroup)")
        self._table = table

    @property
    def select(self):
        return self._select

    @select.setter
    def select(self, select) -> None:
        self._select = select
        self._compiled_select = select if isinstance(select, Selector) else None

    cpdef receive(self, Packet pkt):
        program = self.program
        if program is not None and not program.on_packet(self, pkt):
            return
        self.forward(pkt)

    cpdef forward(self, Packet pkt):
        """Pick the egress among the equal-cost candidates and send. ToR programs call this
        to release packets they held (it does not run the program again)."""
        # The table is a list and each group a list (RouteGroup): read through the list macros
        # (a group's length and items are what the selectors index too).
        if not 0 <= pkt.dst < PyList_GET_SIZE(self._table):
            raise IndexError(f"{self.name}: no table entry for host {pkt.dst}")
        cdef object cands = <object>PyList_GET_ITEM(self._table, pkt.dst)
        if not PyList_Check(cands):
            raise TypeError(f"{self.name}: the route group to host {pkt.dst} is not a list of ports")
        cdef Py_ssize_t n = PyList_GET_SIZE(cands)
        cdef object port
        if n == 1:
            port = <object>PyList_GET_ITEM(cands, 0)
        elif n:
            if self._compiled_select is not None:
                port = self._compiled_select.choose(self, pkt, cands)
            else:
                port = self._select(self, pkt, cands)
        else:  # destination unreachable (failed links, before or after reconvergence)
            c_sim_drop(pkt, NO_ROUTE, None)
            return
        if isinstance(port, Port):
            if pkt.kind:  # a control frame (DATA is kind 0)
                (<Port>port).send_control(pkt)
            else:
                (<Port>port).send(pkt)
        elif pkt.kind:  # a stand-in port (tests)
            port.send_control(pkt)
        else:
            port.send(pkt)

    def __repr__(self) -> str:
        return f"Switch({self.name})"
