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


cdef class PortArray:
    """Ports as one C array of pointers, so a route group names its candidates by index: entry
    ``l`` of a network's array is directed link ``l`` (``Network.ports[l]``, the route table's
    link ids). The list ``ports`` owns the references the pointers borrow; the array never
    changes after it is built."""

    cdef vector[PyObject*] ptrs
    cdef readonly list ports

    def __init__(self, ports) -> None:
        self.ports = list(ports)
        self.ptrs.reserve(len(self.ports))
        for port in self.ports:
            self.ptrs.push_back(<PyObject*>port)

    def __len__(self) -> int:
        return len(self.ports)


class RouteGroup(list):
    """Equal-cost egress ports of one switch toward one destination: the read-only Python view
    of a route group the switch forwards by as port indices (``Switch.install_routes``). Python
    selectors receive it as ``cands``; ``version`` is the routing version it was installed at
    and ``state`` a scheme's per-group memory (cleared at every install). It is a list of
    ports, read as one (indexing, ``len``, iteration, ``random.sample``); writing to it would
    not reach the core's arrays, so every mutator raises."""

    __slots__ = ("version", "state")

    def __init__(self, ports=(), version: int = 0) -> None:
        list.__init__(self, ports)
        self.version = version
        self.state = None

    def _read_only(self, *args, **kwargs):
        raise TypeError(
            "RouteGroup is a read-only view of a switch's route group: install routes with "
            "Switch.install_routes or set Switch.table"
        )

    __setitem__ = __delitem__ = __iadd__ = __imul__ = _read_only
    append = extend = insert = pop = remove = clear = sort = reverse = _read_only


cdef int _fill_group(object group, list ports, int64_t version) except -1:
    # The core writes a view's ports below the read-only mutators (C API on the list itself).
    if PyList_SetSlice(group, 0, PY_SSIZE_T_MAX, ports) < 0:
        raise TypeError("route group views must be lists")
    group.version = version
    group.state = None
    return 0


cdef class Selector:
    """A switch-side load balancer compiled into the core: ``choose`` returns the index of the
    egress among a packet's ``n`` equal-cost candidates (two or more) without a Python call and
    without touching a Python object of the group: ``cands[0:n]`` are the candidates' indices
    into ``switch.port_array`` and ``group`` the switch's local group id (for per-group state in
    C arrays). Calling the object does the same from Python (``selector(switch, pkt, cands)``
    returns ``cands[choose(...)]``; there ``group`` is -1 and ``cands`` NULL, so a compiled
    selector that reads its candidates must override ``__call__``), so a built-in selector and
    a plain Python function ``(switch, pkt, cands) -> Port`` are interchangeable as
    ``Switch.select``."""

    cdef Py_ssize_t choose(self, Switch switch, Packet pkt, int32_t group, const int32_t* cands,
                           Py_ssize_t n) except -1:
        raise NotImplementedError

    def __call__(self, Switch switch, Packet pkt, cands) -> Port:
        return cands[self.choose(switch, pkt, -1, NULL, len(cands))]


cdef inline uint64_t c_hop_hash(uint64_t pkt_hash, uint64_t seed) noexcept nogil:
    # spraylab.net.routes.hop_hash (the splitmix64 finalizer of pkt_hash ^ seed), in uint64
    cdef uint64_t z = pkt_hash ^ seed
    z = (z ^ (z >> 30)) * <uint64_t>0xBF58476D1CE4E5B9
    z = (z ^ (z >> 27)) * <uint64_t>0x94D049BB133111EB
    return z ^ (z >> 31)


cdef class HashSelect(Selector):
    """ECMP: the switch's seeded hash of the packet's header hash (``routes.hop_hash``), the
    seed being the switch's salt from the route table (``RouteTable.salt``)."""

    cdef Py_ssize_t choose(self, Switch switch, Packet pkt, int32_t group, const int32_t* cands,
                           Py_ssize_t n) except -1:
        return <Py_ssize_t>(c_hop_hash(pkt.hash, switch.salt) % <uint64_t>n)


cdef class UniformSelect(Selector):
    """A uniformly random candidate per packet: index ``int(random() * n)``, drawing from
    ``random`` (a ``random.Random``'s bound ``random``), the draw the Python form makes."""

    cdef readonly object random

    def __init__(self, random) -> None:
        self.random = random

    cdef Py_ssize_t choose(self, Switch switch, Packet pkt, int32_t group, const int32_t* cands,
                           Py_ssize_t n) except -1:
        cdef double draw = self.random()
        return <Py_ssize_t>(draw * n)


ecmp_select = HashSelect()


cdef class Switch:
    """Forwards by destination host through C arrays: ``fib[dst]`` is a local route group,
    whose equal-cost candidates are ``group_ports[group_ptr[g]:group_ptr[g + 1]]``, indices
    into ``port_array`` (the network's ports by directed link id). Routing writes them at
    set-up and at every recomputation (``install_routes``); ``table`` is their Python view
    (``table[dst]`` the group's :class:`RouteGroup`).

    ``select`` is the load balancer's per-packet choice (ECMP unless a scheme installs its
    own): a compiled :class:`Selector`, which picks an index without a Python call, or any
    Python callable ``(switch, pkt, cands) -> Port``, given the group's view. ``salt`` is the
    switch's ECMP hash seed, the switch's entry of ``RouteTable.salt`` (installed with the
    routes). A ToR ``program`` (ToR-assisted spraying, flowlets) sees every packet first and
    returns False when it consumed (held or dropped) the packet."""

    cdef public Simulator sim
    cdef public object name, program, hosts, ports, uplinks
    cdef public int index, tier
    cdef readonly uint64_t salt
    cdef public SharedBuffer buffer
    cdef object _select
    cdef Selector _compiled_select
    # the forwarding arrays (class docstring); _port_ptrs is _port_array's C array
    cdef readonly PortArray port_array
    cdef PyObject** _port_ptrs
    cdef vector[int32_t] _fib, _group_ptr, _group_ports
    # local group -> its RouteGroup view, None until first read (a Python selector, ``table``):
    # with compiled selectors most views are never made, and they were a tenth of a large
    # network's memory. A view lives on across installs under its group's key (install_routes).
    cdef list _groups
    cdef vector[int64_t] _keys
    cdef dict _views  # key -> the view made for it
    cdef int64_t _version

    def __init__(self, sim, name, int index, int tier, uint64_t salt=0) -> None:
        # ``salt``: for a switch built on its own (tests); a network's switches take theirs
        # from the route table at every install_routes.
        self.sim = sim
        self.name = name
        self.index = index
        self.tier = tier  # 1 = ToR/leaf/edge/rail leaf, 2 = spine/agg, 3 = core, 0 = NVLink switch
        self.salt = salt
        self.ports = []
        self.uplinks = []
        self._views = {}
        self.table = ()
        self.select = ecmp_select
        self.program = None
        self.buffer = None
        self.hosts = []  # hosts attached directly (ToRs)

    cdef int _write_arrays(self, PortArray port_array, const int32_t[::1] fib, const int32_t[::1] group_ptr,
                           const int32_t[::1] group_ports) except -1:
        """The forwarding arrays (class docstring), copied from checked or hand-built ones."""
        cdef Py_ssize_t i
        self.port_array = port_array
        self._port_ptrs = port_array.ptrs.data()
        self._fib.clear()
        for i in range(fib.shape[0]):
            self._fib.push_back(fib[i])
        self._group_ptr.clear()
        for i in range(group_ptr.shape[0]):
            self._group_ptr.push_back(group_ptr[i])
        self._group_ports.clear()
        for i in range(group_ports.shape[0]):
            self._group_ports.push_back(group_ports[i])
        return 0

    def install_routes(self, PortArray port_array, const int32_t[::1] fib, const int32_t[::1] group_ptr,
                       const int32_t[::1] group_ports, const int64_t[::1] keys, int64_t version,
                       uint64_t salt) -> None:
        """Write one routing version into the forwarding arrays: ``fib[dst]`` the local group
        of every destination host, group ``g``'s candidates ``group_ports[group_ptr[g]:group_ptr[g
        + 1]]`` as indices into ``port_array``, ``keys[g]`` what group ``g`` leads to (the same
        key in every version: its :class:`RouteGroup` view, once made, stays the same object,
        its ports rewritten, ``version`` set and ``state`` cleared) and ``salt`` the switch's
        hash seed (``RouteTable.salt``). Checked once here, so forwarding reads the arrays
        unchecked."""
        cdef Py_ssize_t n_groups = keys.shape[0], n_ports = len(port_array), i, g
        if group_ptr.shape[0] != n_groups + 1 or group_ptr[0] != 0:
            raise ValueError(f"{self.name}: group_ptr must hold {n_groups + 1} offsets from 0")
        for g in range(n_groups):
            if group_ptr[g + 1] < group_ptr[g]:
                raise ValueError(f"{self.name}: group_ptr must not decrease (group {g})")
        if group_ports.shape[0] != group_ptr[n_groups]:
            raise ValueError(f"{self.name}: group_ports must hold {group_ptr[n_groups]} port indices")
        for i in range(group_ports.shape[0]):
            if not 0 <= group_ports[i] < n_ports:
                raise ValueError(f"{self.name}: port index {group_ports[i]} outside 0..{n_ports - 1}")
        for i in range(fib.shape[0]):
            if not 0 <= fib[i] < n_groups:
                raise ValueError(f"{self.name}: fib[{i}] = {fib[i]} is no group (0..{n_groups - 1})")
        self._write_arrays(port_array, fib, group_ptr, group_ports)
        self._keys.clear()
        for g in range(n_groups):
            self._keys.push_back(keys[g])
        self._version = version
        self._groups = [None] * n_groups
        self.salt = salt
        if self._views:  # the views made so far (held by schemes, maybe) follow
            for g in range(n_groups):
                if keys[g] in self._views:
                    self._view(g)

    cdef object _view(self, int32_t g):
        """Local group ``g``'s view, made (or refilled, after an install) on first read."""
        view = <object>PyList_GET_ITEM(self._groups, g)
        if view is not None:
            return view
        key = self._keys[g]
        view = self._views.get(key)
        if view is None:
            view = self._views[key] = RouteGroup()
        plist = self.port_array.ports
        _fill_group(view, [plist[self._group_ports[i]] for i in range(self._group_ptr[g], self._group_ptr[g + 1])],
                    self._version)
        self._groups[g] = view
        return view

    @property
    def table(self) -> SwitchTable:
        """``table[dst]``: the route group view (a :class:`RouteGroup`, the egress ports) toward
        host ``dst``. Read-only: the core forwards by the arrays ``install_routes`` wrote."""
        return SwitchTable(self)

    @table.setter
    def table(self, table) -> None:
        """Forward by hand-made groups (tests, stand-in ports): ``table[dst]`` a list of ports
        (or any egress objects with ``send``/``send_control``). Groups given as one list object
        stay one group; the ports become this switch's own port array. A list given here is
        copied: changing it later does not change the routes."""
        entries = list(table)
        for group in entries:
            if not isinstance(group, list):
                raise TypeError("Switch.table: every entry must be a list of ports (a RouteGroup)")
        local: dict = {}  # id(group) -> local group id
        groups: list = []
        fib = []
        for group in entries:
            g = local.get(id(group))
            if g is None:
                g = local[id(group)] = len(groups)
                groups.append(group)
            fib.append(g)
        port_of: dict = {}  # id(port) -> index into the switch's own array
        ports: list = []
        ptr = [0]
        cands = []
        for group in groups:
            for port in group:
                i = port_of.get(id(port))
                if i is None:
                    i = port_of[id(port)] = len(ports)
                    ports.append(port)
                cands.append(i)
            ptr.append(len(cands))
        self._write_arrays(PortArray(ports), array("i", fib), array("i", ptr), array("i", cands))
        # views: the route groups given keep their identity (and scheme state); plain lists too
        self._groups = [group if isinstance(group, RouteGroup) else RouteGroup(group) for group in groups]
        self._keys.clear()
        self._views = {}

    def group_ports(self, int64_t dst) -> list:
        """The candidates toward host ``dst`` as indices into ``port_array`` (what a compiled
        selector reads)."""
        if not 0 <= dst < <int64_t>self._fib.size():
            raise IndexError(f"{self.name}: no table entry for host {dst}")
        cdef int32_t g = self._fib[dst]
        return [self._group_ports[i] for i in range(self._group_ptr[g], self._group_ptr[g + 1])]

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
        # C arrays only: the destination's group, its candidates' indices, the port pointers.
        # A Python object of the group is touched only for a Python selector (its view).
        if not 0 <= pkt.dst < <int64_t>self._fib.size():
            raise IndexError(f"{self.name}: no table entry for host {pkt.dst}")
        cdef int32_t g = self._fib[pkt.dst]
        cdef int32_t start = self._group_ptr[g]
        cdef Py_ssize_t n = self._group_ptr[g + 1] - start
        cdef object port
        if n == 1:
            port = <object>self._port_ptrs[self._group_ports[start]]
        elif n:
            if self._compiled_select is not None:
                port = <object>self._port_ptrs[self._group_ports[
                    start + self._compiled_select.choose(self, pkt, g, &self._group_ports[start], n)]]
            else:
                port = self._select(self, pkt, self._view(g))
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


cdef class SwitchTable:
    """A switch's routes as a read-only sequence: ``table[dst]`` the route group view toward
    host ``dst``, made when first read (``Switch.table``)."""

    cdef Switch switch

    def __cinit__(self, Switch switch) -> None:
        self.switch = switch

    def __len__(self) -> int:
        return self.switch._fib.size()

    def __getitem__(self, dst):
        cdef Py_ssize_t n = self.switch._fib.size()
        if isinstance(dst, slice):
            return tuple([self[i] for i in range(*dst.indices(n))])
        cdef Py_ssize_t i = dst
        if i < 0:
            i += n
        if not 0 <= i < n:
            raise IndexError(f"{self.switch.name}: no table entry for host {dst}")
        return self.switch._view(self.switch._fib[i])

    def __iter__(self):
        for i in range(self.switch._fib.size()):
            yield self.switch._view(self.switch._fib[i])
