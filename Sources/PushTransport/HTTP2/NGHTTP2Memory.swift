import CNGHTTP2
import Glibc

/// The `nghttp2_mem` allocator given to every session of a loop. It pools nghttp2's small blocks
/// in size classes (32 B … 4 KiB, a free list each), so steady-state traffic reuses blocks instead
/// of calling malloc, and counts what reaches malloc (so tests can tell nghttp2's allocations from
/// Swift-side ones).
///
/// The pool keeps at most ``poolLimit`` bytes: a burst of frames queued for a client that stopped
/// reading can take far more, and those blocks go back to malloc when freed instead of staying pooled
/// for good. ``trimPool()`` empties it.
///
/// One instance per loop (single-threaded); sessions retain it, so it outlives every block it handed out.
public final class NGHTTP2Memory {
    /// Layout of the state block `mem_user_data` points at (UInt64 words).
    enum Word {
        static let mallocs = 0          // blocks obtained from malloc/calloc/realloc
        static let frees = 1            // blocks returned to free
        static let requests = 2         // allocation requests from nghttp2 (pooled or not)
        static let pooling = 3          // 1 = pool small blocks
        static let pooledBytes = 4      // bytes in the free lists now
        static let poolLimit = 5        // the most bytes the free lists keep
        static let heads = 6            // free-list heads, one per class
        static let classes = 8          // 32, 64, …, 4096
        static let count = heads + classes
    }
    /// Bytes before each block: word 0 = size class (or `large`), word 1 = requested size when large.
    static let header = 16
    static let large: UInt64 = 0xFF

    let state: UnsafeMutablePointer<UInt64>

    /// The default ``poolLimit``: what a loop serving thousands of busy streams reuses, and no more.
    static let defaultPoolLimit = 16 << 20

    /// Creates an allocator; `pooling: false` forwards every request to malloc (for comparisons).
    init(pooling: Bool = true, poolLimit: Int = NGHTTP2Memory.defaultPoolLimit) {
        state = .allocate(capacity: Word.count)
        state.initialize(repeating: 0, count: Word.count)
        state[Word.pooling] = pooling ? 1 : 0
        state[Word.poolLimit] = UInt64(max(0, poolLimit))
    }

    deinit {
        trimPool()
        state.deallocate()
    }

    /// Gives every pooled block back to malloc (after a burst: many connections closed at once).
    func trimPool() {
        for c in 0..<Word.classes {
            var p = UnsafeMutableRawPointer(bitPattern: UInt(state[Word.heads + c]))
            while let block = p {
                p = block.load(as: UnsafeMutableRawPointer?.self)
                free(block - NGHTTP2Memory.header)
                state[Word.frees] &+= 1
            }
            state[Word.heads + c] = 0
        }
        state[Word.pooledBytes] = 0
    }

    /// Bytes in the pool's free lists now.
    var pooledBytes: Int { Int(state[Word.pooledBytes]) }
    /// The most bytes the pool keeps; blocks freed past it go back to malloc.
    var poolLimit: Int { Int(state[Word.poolLimit]) }

    /// Blocks nghttp2 obtained from malloc (after pooling) so far.
    public var allocations: UInt64 { state[Word.mallocs] }
    /// Blocks given back to free so far.
    var frees: UInt64 { state[Word.frees] }
    /// Allocation requests nghttp2 made (served from the pool or from malloc).
    public var requests: UInt64 { state[Word.requests] }

    @inline(__always) static func sizeClass(_ n: Int) -> Int {
        if n <= 32 { return 0 }
        let c = (Int.bitWidth - (n - 1).leadingZeroBitCount) - 5
        return c < Word.classes ? c : -1
    }

    static func allocate(_ size: Int, _ st: UnsafeMutablePointer<UInt64>) -> UnsafeMutableRawPointer? {
        st[Word.requests] &+= 1
        let c = st[Word.pooling] != 0 ? sizeClass(size) : -1
        if c >= 0 {
            if let block = UnsafeMutableRawPointer(bitPattern: UInt(st[Word.heads + c])) {
                let next = block.load(as: UnsafeMutableRawPointer?.self)
                st[Word.heads + c] = UInt64(UInt(bitPattern: next))
                st[Word.pooledBytes] &-= UInt64(32 << c)
                return block
            }
            guard let raw = malloc((32 << c) + header) else { return nil }
            st[Word.mallocs] &+= 1
            raw.storeBytes(of: UInt64(c), as: UInt64.self)
            return raw + header
        }
        guard let raw = malloc(size + header) else { return nil }
        st[Word.mallocs] &+= 1
        raw.storeBytes(of: large, as: UInt64.self)
        raw.storeBytes(of: UInt64(size), toByteOffset: 8, as: UInt64.self)
        return raw + header
    }

    static func release(_ p: UnsafeMutableRawPointer?, _ st: UnsafeMutablePointer<UInt64>) {
        guard let p else { return }
        let raw = p - header
        let c = raw.load(as: UInt64.self)
        let size = UInt64(32) << c
        if c == large || st[Word.pooledBytes] &+ size > st[Word.poolLimit] {
            st[Word.frees] &+= 1
            free(raw)
            return
        }
        st[Word.pooledBytes] &+= size
        p.storeBytes(of: UnsafeMutableRawPointer(bitPattern: UInt(st[Word.heads + Int(c)])), as: UnsafeMutableRawPointer?.self)
        st[Word.heads + Int(c)] = UInt64(UInt(bitPattern: p))
    }

    static func capacity(_ p: UnsafeMutableRawPointer) -> Int {
        let raw = p - header
        let c = raw.load(as: UInt64.self)
        return c == large ? Int(raw.load(fromByteOffset: 8, as: UInt64.self)) : 32 << Int(c)
    }

    /// The C allocator table (for tests that drive it directly; sessions get it internally).
    var testTable: nghttp2_mem { table }

    /// The C allocator table; `mem_user_data` points at the state block.
    var table: nghttp2_mem {
        nghttp2_mem(
            mem_user_data: UnsafeMutableRawPointer(state),
            malloc: { size, ud in
                NGHTTP2Memory.allocate(size, ud!.assumingMemoryBound(to: UInt64.self))
            },
            free: { p, ud in
                NGHTTP2Memory.release(p, ud!.assumingMemoryBound(to: UInt64.self))
            },
            calloc: { n, size, ud in
                let total = n * size
                let p = NGHTTP2Memory.allocate(total, ud!.assumingMemoryBound(to: UInt64.self))
                if let p { memset(p, 0, total) }
                return p
            },
            realloc: { p, size, ud in
                let st = ud!.assumingMemoryBound(to: UInt64.self)
                guard let p else { return NGHTTP2Memory.allocate(size, st) }
                let cap = NGHTTP2Memory.capacity(p)
                if size <= cap && (p - NGHTTP2Memory.header).load(as: UInt64.self) != NGHTTP2Memory.large { return p }
                guard let q = NGHTTP2Memory.allocate(size, st) else { return nil }
                q.copyMemory(from: p, byteCount: min(cap, size))
                NGHTTP2Memory.release(p, st)
                return q
            })
    }
}

@available(*, unavailable) extension NGHTTP2Memory: Sendable {}

extension EventLoop {
    /// nghttp2's allocator for every session of this loop (counts, and pools small blocks).
    public var nghttp2Memory: NGHTTP2Memory { local(NGHTTP2Memory.self) { NGHTTP2Memory() } }
}
