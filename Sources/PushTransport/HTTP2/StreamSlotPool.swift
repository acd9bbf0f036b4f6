/// Per-stream state kept in manually allocated memory at a stable address (the nghttp2 stream user
/// data), so callbacks reach it with no lookup, retain or exclusivity check.
protocol StreamSlot {
    /// True from acquire until the slot is back in its pool's free list.
    var active: Bool { get set }
    /// Frees the buffers the slot owns (the pool frees the slot itself).
    func freeStorage()
}

/// The stream slots of one connection, client or server: created when no free one is left, reused
/// after their stream closes, freed with the connection. Steady state allocates nothing.
struct StreamSlotPool<Slot: StreamSlot>: ~Copyable {
    private var all: [UnsafeMutablePointer<Slot>] = []
    /// The free slots, a stack in a buffer that holds every slot (`freeCapacity` ≥ `all.count`): taking
    /// and giving back one is a load or store and a count, with none of an array's checks.
    private var free: UnsafeMutablePointer<UnsafeMutablePointer<Slot>>
    private var freeCount = 0
    private var freeCapacity: Int

    /// A pool for up to about `streams` concurrent streams. It starts small (an idle connection costs
    /// little) and grows with the streams a connection actually opens, then stays at that size.
    init(streams: Int) {
        let n = min(streams * 2, 16)
        all.reserveCapacity(n)
        freeCapacity = max(all.capacity, 1)
        free = .allocate(capacity: freeCapacity)
    }

    deinit {
        // Index loop, not for-in: unspecialized iterators allocate coroutine frames in debug builds.
        var i = 0
        while i < all.count {
            let s = all[i]
            s.pointee.freeStorage()
            s.deinitialize(count: 1)
            s.deallocate()
            i += 1
        }
        free.deallocate()
    }

    /// A free slot, marked active; `make` gives the value of a new one when none is free.
    @inline(__always)
    mutating func acquire(_ make: () -> Slot) -> UnsafeMutablePointer<Slot> {
        let s: UnsafeMutablePointer<Slot>
        if freeCount > 0 {
            freeCount -= 1
            s = free[freeCount]
        } else {
            s = .allocate(capacity: 1)
            s.initialize(to: make())
            all.append(s)
            // The free list holds every slot at most: size it with them, not later on a release.
            if freeCapacity < all.count {
                let c = max(all.capacity, all.count)
                let grown = UnsafeMutablePointer<UnsafeMutablePointer<Slot>>.allocate(capacity: c)
                grown.moveInitialize(from: free, count: freeCount)
                free.deallocate()
                free = grown
                freeCapacity = c
            }
        }
        s.pointee.active = true
        return s
    }

    /// Puts an active slot back in the free list; a slot released already is left alone.
    @inline(__always)
    mutating func release(_ s: UnsafeMutablePointer<Slot>) {
        if !s.pointee.active { return }
        s.pointee.active = false
        free[freeCount] = s
        freeCount += 1
    }

    /// Every slot ever created (active or free), for a walk when the connection closes.
    var count: Int { all.count }

    /// Slot `i` of `count`.
    subscript(i: Int) -> UnsafeMutablePointer<Slot> { all[i] }
}
