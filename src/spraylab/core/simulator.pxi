# The event loop: integer-picosecond time, one seeded RNG, the calendar queue of calendar.h.
#
# An event is (time, kind, fn, arg). Kind EV_CALL calls ``fn(arg)``: any Python callable, the
# API every component outside the core uses. The other kinds name a compiled step the loop runs
# without a Python call (a packet's arrival at the far end of a port, a lossless port's
# transmission end); ``fn`` is then the compiled object (the port), so what is pending can still
# be read as ``(time, fn, arg)`` (``pending``, ``pending_window``).

cdef extern from "calendar.h":
    int BUCKET_SHIFT_C "BUCKET_SHIFT"

    cdef struct Event:
        int64_t t
        int64_t aux
        PyObject* fn
        PyObject* arg
        int kind

    cdef cppclass Calendar:
        vector[Event] current
        size_t index
        int64_t current_bucket
        unordered_map[int64_t, vector[Event]] buckets
        void push(const Event& e)
        bint next_bucket()
        void put_back_rest()
        bint has_future()
        void release_all()

BUCKET_SHIFT = BUCKET_SHIFT_C
PS_PER_US = 1_000_000
PS_PER_S = 1_000_000_000_000

cdef enum:
    EV_CALL = 0  # fn(arg)
    EV_ARRIVE = 1  # (<Port>fn).arrive(arg, aux): through the stages of receiver generation aux
    EV_ARRIVE_QUEUED = 2  # (<Port>fn).arrive_queued(arg): a data packet that queued there
    EV_TX_DONE = 3  # (<PfcPort>fn).tx_done(): a lossless port finished a transmission
    EV_NIC_TX = 4  # (<Nic>fn).tx(aux): a NIC's transmit event for time aux


class StopSimulation(Exception):
    """Raised by a callback to end the run at the current event (e.g. the workload is done)."""


cdef class Simulator:
    """A discrete-event loop with integer-picosecond time and one seeded RNG.

    Ties keep FIFO order: a bucket is sorted stably by time alone, and an event scheduled into
    the bucket being processed goes after every event of its time."""

    cdef public int64_t now
    cdef public object rng
    cdef public int64_t events
    cdef public str stop_reason
    cdef Calendar cal
    cdef object _progress

    def __init__(self, seed: int = 1) -> None:
        self.now = 0
        self.rng = random.Random(seed)
        self.events = 0
        self.stop_reason = ""
        self._progress = None

    def __dealloc__(self):
        self.cal.release_all()

    def discard_pending(self) -> None:
        """Drop every pending event (a finished run's timers, packets still on wires) and the
        references they hold. The calendar's events are C++ values the cyclic collector does
        not see: while one is pending, the callable it holds (a queue pair's timer, a port)
        keeps the whole network alive through the simulator, which every component refers to,
        even after the caller dropped both. ``spraylab.runs.experiment.run`` calls this once
        it has the result, so the network is freed before the result is saved."""
        self.cal.release_all()

    cdef inline void push(self, int64_t time_ps, int kind, object fn, object arg, int64_t aux):
        cdef Event e
        e.t = time_ps
        e.kind = kind
        e.aux = aux
        e.fn = <PyObject*>fn
        e.arg = <PyObject*>arg
        Py_INCREF(fn)
        Py_INCREF(arg)
        self.cal.push(e)

    cpdef schedule(self, int64_t time_ps, object fn, object arg=None):
        """Schedule ``fn(arg)`` at absolute time ``time_ps`` (the hot-path entry: no checks)."""
        self.push(time_ps, EV_CALL, fn, arg, 0)

    def at(self, int64_t time_ps, fn, arg=None) -> None:
        """Schedule ``fn(arg)`` at absolute time ``time_ps`` (never in the past)."""
        if time_ps < self.now:
            raise ValueError(f"cannot schedule at {time_ps} ps, before now ({self.now} ps)")
        self.push(time_ps, EV_CALL, fn, arg, 0)

    cpdef after(self, int64_t delay_ps, object fn, object arg=None):
        self.push(self.now + delay_ps, EV_CALL, fn, arg, 0)

    # --- reading what is pending (self-checks, the monitor) -------------------------------
    @staticmethod
    cdef tuple _as_tuple(const Event& e):
        return (e.t, <object>e.fn, <object>e.arg)

    def pending(self) -> list:
        """Every scheduled event as ``(time_ps, fn, arg)``, in no particular order. For a packet
        on a wire ``fn`` is the port it left through."""
        return self.pending_window(-1, <int64_t>1 << 62)

    def pending_window(self, int64_t low_bucket, int64_t high_bucket) -> list:
        """The pending events of the bucket being processed and of the future buckets
        ``low_bucket..high_bucket`` (bucket = time >> BUCKET_SHIFT), as ``pending``."""
        cdef size_t i
        cdef vector[Event]* events
        out = [Simulator._as_tuple(self.cal.current[i]) for i in range(self.cal.index, self.cal.current.size())]
        cdef unordered_map[int64_t, vector[Event]].iterator it = self.cal.buckets.begin()
        while it != self.cal.buckets.end():
            if low_bucket <= deref(it).first <= high_bucket:
                events = &deref(it).second
                for i in range(events.size()):
                    out.append(Simulator._as_tuple(deref(events)[i]))
            inc(it)
        return out

    def pending_packets(self) -> int:
        """How many pending events carry a packet (packets on wires), counted without building
        the list ``pending`` gives."""
        cdef size_t i
        cdef int64_t count = 0
        cdef vector[Event]* events
        for i in range(self.cal.index, self.cal.current.size()):
            count += isinstance(<object>self.cal.current[i].arg, Packet)
        cdef unordered_map[int64_t, vector[Event]].iterator it = self.cal.buckets.begin()
        while it != self.cal.buckets.end():
            events = &deref(it).second
            for i in range(events.size()):
                count += isinstance(<object>deref(events)[i].arg, Packet)
            inc(it)
        return count

    def has_later_buckets(self) -> bool:
        """Is any event pending beyond the bucket being processed?"""
        return self.cal.has_future()

    def bucket_tail(self):
        """The last event of the bucket being processed (it may be the running one), or None."""
        if self.cal.current.empty():
            return None
        return Simulator._as_tuple(self.cal.current.back())

    # --- the rest of the API --------------------------------------------------------------
    def derive_rng(self, salt: int):
        """A child RNG for one component, derived from the run seed, so adding draws in one
        component does not shift the random stream of another."""
        return random.Random(self.rng.getrandbits(64) ^ salt)

    def set_progress(self, fn) -> None:
        """``fn(sim, wall_elapsed_s)`` is called every 2^16 events."""
        self._progress = fn

    def _checkpoint(self, int64_t n, int64_t event_cap, double start, max_wall_s) -> str:
        """Every 65,536 events: the budgets and the progress report. Returns the stop reason,
        or "idle" to go on."""
        if n >= event_cap:
            return "event_budget"
        elapsed = time.perf_counter() - start
        if self._progress is not None:
            self.events = n
            self._progress(self, elapsed)
        if max_wall_s is not None and elapsed > max_wall_s:
            return "wall_budget"
        return "idle"

    cdef int _fire(self, const Event& e) except -1:
        # The locals take their own references; the event's are released first, so a callback
        # that raises leaks nothing.
        cdef object fn = <object>e.fn
        cdef object arg = <object>e.arg
        Py_DECREF(fn)
        Py_DECREF(arg)
        cdef int kind = e.kind
        if kind == EV_ARRIVE:
            return (<Port>fn).arrive(<Packet>arg, e.aux)
        if kind == EV_CALL:
            fn(arg)
            return 0
        if kind == EV_NIC_TX:
            return (<Nic>fn).tx(e.aux)
        if kind == EV_ARRIVE_QUEUED:
            return (<Port>fn).arrive_queued(<Packet>arg)
        return (<PfcPort>fn).tx_done()

    def run(self, until_ps=None, max_events=None, max_wall_s=None) -> str:
        """Process events until none are left, ``until_ps`` is reached, a callback raises
        :class:`StopSimulation`, or an event/wall budget runs out. Returns the stop reason:
        ``"idle"``, ``"time_limit"``, ``"done"``, ``"event_budget"`` or ``"wall_budget"``.
        The run can be continued by calling ``run`` again."""
        cdef int64_t limit = until_ps if until_ps is not None else (<int64_t>1 << 62)
        cdef int64_t event_cap = self.events + max_events if max_events is not None else (<int64_t>1 << 62)
        cdef double start = time.perf_counter()
        cdef int64_t n = self.events
        cdef Calendar* cal = &self.cal
        cdef Event e
        reason = "idle"
        # Packets and events form no reference cycles, so the cyclic collector would only
        # re-scan the fabric's long-lived objects over and over: pause it while running.
        gc_was_enabled = gc.isenabled()
        gc.disable()
        try:
            while True:
                if cal.index >= cal.current.size():
                    if not cal.next_bucket():
                        cal.current.clear()
                        cal.index = 0
                        if until_ps is not None and self.now < until_ps:
                            self.now = until_ps
                        break
                e = cal.current[cal.index]
                if e.t > limit:
                    self.now = limit
                    reason = "time_limit"
                    cal.put_back_rest()
                    break
                cal.index += 1
                self.now = e.t
                n += 1
                self._fire(e)
                if not (n & 0xFFFF):
                    reason = self._checkpoint(n, event_cap, start, max_wall_s)
                    if reason != "idle":
                        break
        except StopSimulation as stop:
            reason = str(stop) or "done"
        finally:
            if gc_was_enabled:
                gc.enable()
            self.events = n
        self.stop_reason = reason
        return reason
