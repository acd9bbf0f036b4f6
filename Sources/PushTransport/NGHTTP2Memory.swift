import CNGHTTP2

/// The `nghttp2_mem` allocator given to every session of a loop: counts nghttp2's own allocations
/// (so tests can separate them from Swift-side ones) and hands out the C table.
///
/// One instance per loop; sessions retain it, so it outlives every session that uses it.
public final class NGHTTP2Memory {
    /// Counters read through `allocations` / `frees`; kept at a stable address for the C callbacks.
    let counters: UnsafeMutablePointer<UInt64>

    /// Creates an allocator with zeroed counters.
    public init() {
        counters = .allocate(capacity: 2)
        counters.initialize(repeating: 0, count: 2)
    }

    deinit { counters.deallocate() }

    /// Blocks nghttp2 allocated (malloc, calloc, realloc) through this allocator so far.
    public var allocations: UInt64 { counters[0] }
    /// Blocks nghttp2 freed so far.
    public var frees: UInt64 { counters[1] }

    /// The C allocator table; `mem_user_data` points at the counters.
    var table: nghttp2_mem {
        nghttp2_mem(
            mem_user_data: UnsafeMutableRawPointer(counters),
            malloc: { size, ud in
                ud!.assumingMemoryBound(to: UInt64.self)[0] &+= 1
                return malloc(size)
            },
            free: { p, ud in
                if p != nil { ud!.assumingMemoryBound(to: UInt64.self)[1] &+= 1 }
                free(p)
            },
            calloc: { n, size, ud in
                ud!.assumingMemoryBound(to: UInt64.self)[0] &+= 1
                return calloc(n, size)
            },
            realloc: { p, size, ud in
                ud!.assumingMemoryBound(to: UInt64.self)[0] &+= 1
                return realloc(p, size)
            })
    }
}

@available(*, unavailable) extension NGHTTP2Memory: Sendable {}
