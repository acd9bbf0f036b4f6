import Synchronization

/// A bounded queue from one producer thread to one consumer thread, lock-free and allocation-free after
/// init: the producer never waits (``push(_:)`` returns false when full, and the caller counts what it
/// could not queue), and the consumer takes everything queued so far with ``drain(_:)``.
///
/// ```swift
/// let ring = SPSCRing<Int>(capacity: 1024)
/// _ = ring.push(7)                       // producer thread
/// ring.drain { value in print(value) }   // consumer thread
/// ```
public final class SPSCRing<Element>: @unchecked Sendable {
    // @unchecked: `storage` is written by the producer only at `tail` and read by the consumer only
    // below it; `head` and `tail` are atomics, published with release and read with acquire.
    private let storage: UnsafeMutablePointer<Element>
    private let mask: Int
    private let head = Atomic<Int>(0)
    private let tail = Atomic<Int>(0)
    /// Elements refused because the ring was full (written by the producer, read by anyone).
    private let refusedCount = Atomic<Int>(0)

    /// A ring holding at least `capacity` elements (rounded up to a power of two).
    public init(capacity: Int) {
        var c = 1
        while c < max(2, capacity) { c <<= 1 }
        storage = .allocate(capacity: c)
        mask = c - 1
    }

    deinit {
        drain { _ in }
        storage.deallocate()
    }

    /// How many elements it holds at most.
    public var capacity: Int { mask + 1 }

    /// Elements ``push(_:)`` refused because the ring was full.
    public var refused: Int { refusedCount.load(ordering: .relaxed) }

    /// Queues `element` (producer thread only); false when the ring is full.
    @inline(__always)
    @discardableResult
    public func push(_ element: Element) -> Bool {
        let t = tail.load(ordering: .relaxed)
        if t - head.load(ordering: .acquiring) > mask {
            refusedCount.add(1, ordering: .relaxed)
            return false
        }
        (storage + (t & mask)).initialize(to: element)
        tail.store(t + 1, ordering: .releasing)
        return true
    }

    /// Hands every queued element to `body` in order and removes it (consumer thread only); returns how
    /// many.
    @discardableResult
    public func drain(_ body: (Element) -> Void) -> Int {
        let h = head.load(ordering: .relaxed)
        let t = tail.load(ordering: .acquiring)
        var i = h
        while i < t {
            body((storage + (i & mask)).move())
            i += 1
        }
        head.store(t, ordering: .releasing)
        return t - h
    }
}
