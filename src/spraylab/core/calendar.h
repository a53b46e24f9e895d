// The calendar queue under spraylab.core.Simulator: events in buckets of 2^BUCKET_SHIFT ps.
//
// Scheduling appends to a bucket's vector; a bucket is sorted once (stably, by time alone) when
// its time comes, then read in order. An event scheduled into the bucket being read goes after
// every event of its time, so ties keep scheduling order without a sequence number. The
// references an event holds (fn, arg) are owned by the Cython side (core/simulator.pxi).
#pragma once
#include <Python.h>

#include <algorithm>
#include <cstdint>
#include <functional>
#include <queue>
#include <unordered_map>
#include <utility>
#include <vector>

static const int BUCKET_SHIFT = 12;  // 4.1 ns buckets: a few to a few hundred events each
// Emptied bucket vectors kept for reuse: at most this many, each of at most this capacity (a
// recycled vector keeps its capacity, and most future buckets hold a timer or two). The cap bounds
// memory: every future bucket may hold a recycled vector, so a packet run with thousands of future
// buckets (deep queues: 3,500 on the 1024-host htsim permutation, about 28 events each) kept up to
// SPARE_CAPACITY x 40 bytes in each: 20 KB at 512 (+53 MB peak RSS there), 2.5 KB at 64. A
// bucket that outgrows it is grown by the vector (amortized, a few reallocations) and freed.
static const size_t SPARE_VECTORS = 256;
static const size_t SPARE_CAPACITY = 64;

struct Event {
    int64_t t;      // ps
    int64_t aux;    // the kind's extra word (a port's receiver generation)
    PyObject* fn;   // a callable (kind 0) or the compiled object the kind names
    PyObject* arg;
    int kind;
};

static inline bool event_earlier(const Event& a, const Event& b) { return a.t < b.t; }

struct Calendar {
    std::vector<Event> current;  // the bucket being read, sorted; [0, index) already run
    size_t index = 0;
    int64_t current_bucket = -1;
    std::unordered_map<int64_t, std::vector<Event>> buckets;  // future buckets, unsorted
    std::priority_queue<int64_t, std::vector<int64_t>, std::greater<int64_t>> heap;
    std::vector<std::vector<Event>> spare;  // emptied vectors, reused (no allocation per bucket)
    // The future bucket pushed to last: bursts of events land in one bucket, and a map node's
    // address is stable until that bucket is taken (next_bucket, put_back_rest forget it).
    int64_t last_bucket = -1;
    std::vector<Event>* last_events = nullptr;

    void push(const Event& e) {
        const int64_t bucket = e.t >> BUCKET_SHIFT;
        if (bucket == current_bucket) {
            // after every event of the same time (and so after every one already run)
            auto at = std::upper_bound(current.begin() + index, current.end(), e, event_earlier);
            current.insert(at, e);
            return;
        }
        if (bucket == last_bucket) {
            last_events->push_back(e);
            return;
        }
        auto found = buckets.find(bucket);
        if (found == buckets.end()) {
            std::vector<Event> events;
            if (!spare.empty()) {
                events = std::move(spare.back());
                spare.pop_back();
            }
            events.push_back(e);
            found = buckets.emplace(bucket, std::move(events)).first;
            heap.push(bucket);
        } else {
            found->second.push_back(e);
        }
        last_bucket = bucket;
        last_events = &found->second;
    }

    // Make the earliest future bucket current; false when there is none.
    bool next_bucket() {
        if (heap.empty()) return false;
        const int64_t bucket = heap.top();
        heap.pop();
        auto found = buckets.find(bucket);
        if (bucket == last_bucket) last_bucket = -1;
        current.clear();
        if (spare.size() < SPARE_VECTORS && current.capacity() <= SPARE_CAPACITY) {
            spare.push_back(std::move(current));
        }
        current = std::move(found->second);
        buckets.erase(found);
        std::stable_sort(current.begin(), current.end(), event_earlier);
        index = 0;
        current_bucket = bucket;
        return true;
    }

    // The run stops at a time limit inside the current bucket: its unread events go back to
    // the future buckets (events scheduled before the run resumes may be earlier than them).
    void put_back_rest() {
        std::vector<Event> rest(current.begin() + index, current.end());
        buckets[current_bucket] = std::move(rest);
        last_bucket = -1;
        heap.push(current_bucket);
        current.clear();
        index = 0;
        current_bucket = -1;
    }

    bool has_future() const { return !heap.empty(); }

    // Drop every pending event and release its references. The calendar is emptied before the
    // first release, so a destructor a release runs finds a consistent (empty) queue.
    void release_all() {
        std::vector<Event> rest(std::move(current));
        const size_t from = index;
        std::unordered_map<int64_t, std::vector<Event>> future(std::move(buckets));
        current = std::vector<Event>();
        buckets.clear();
        heap = decltype(heap)();
        spare = std::vector<std::vector<Event>>();
        index = 0;
        current_bucket = -1;
        last_bucket = -1;
        last_events = nullptr;
        for (size_t i = from; i < rest.size(); ++i) {
            Py_XDECREF(rest[i].fn);
            Py_XDECREF(rest[i].arg);
        }
        for (auto& bucket : future) {
            for (const Event& e : bucket.second) {
                Py_XDECREF(e.fn);
                Py_XDECREF(e.arg);
            }
        }
    }
};
