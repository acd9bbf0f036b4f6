import CUV

/// One end of an in-memory byte stream on an `EventLoop`: what one end writes, the other reads, with
/// no socket and no other thread (the idea of swift-nio's `EmbeddedChannel`). It lets an HTTP/2
/// client and server talk inside one test, deterministically:
///
/// ```swift
/// let (clientEnd, serverEnd) = InMemoryTransport.pair(loop: loop)
/// server.accept(serverEnd)                      // an HTTP2Server that need not listen
/// client.connect(over: clientEnd)               // an HTTP2ClientConnection
/// loop.run(until: { connected }, timeoutNanoseconds: 1_000_000_000)
/// ```
///
/// An end no session took is driven by hand: `send(_:)` puts bytes on the wire, `takeReceived()`
/// returns what the other end wrote, `close()` hangs up (the other end reads EOF).
///
/// Bytes cross on the next loop iteration, never inside the write that sent them (a uv_idle handle
/// is active while an end has work), so a client and a server answering each other forever still let
/// timers and `run(until:)` run. `readLimit` cuts deliveries into smaller reads (down to one byte:
/// frames split anywhere) and `bufferLimit` bounds what may wait unread, so a writer sees a pending
/// write and resumes when the reader catches up, as with a full socket buffer.
public final class InMemoryTransport: ByteTransport {
    // unowned(unsafe), as in TCPTransport: the session clears it before it goes away.
    unowned(unsafe) var owner: ByteTransportOwner?
    let loop: EventLoop
    private weak var peer: InMemoryTransport?
    /// Bytes the peer wrote that this end has not read yet.
    private var inbound = ByteQueue()
    /// The rest of a write that did not fit the peer's `bufferLimit` (the iovec array is updated in place).
    private var pendingIov: UnsafeMutablePointer<uv_buf_t>?
    private var pendingCount = 0
    /// A pending write finished; the owner hears it from the idle callback.
    private var writeCompleted = false
    private let idle: UnsafeMutablePointer<uv_idle_t>
    private var idleActive = false
    private var closed = false
    private var peerClosed = false
    private var reading = false
    /// The place an accepting server's ConnectionCap gave this end, given back at close.
    var capPlace: ConnectionCap?

    /// The most bytes one read delivers (default 64 KiB, a socket read's worth); 1 splits every frame.
    var readLimit = 64 * 1024
    /// The most bytes that may wait unread at this end before the peer's writes go pending (default 1 MiB).
    var bufferLimit = 1 << 20

    /// Two connected ends on `loop`.
    static func pair(loop: EventLoop) -> (InMemoryTransport, InMemoryTransport) {
        let a = InMemoryTransport(loop: loop), b = InMemoryTransport(loop: loop)
        a.peer = b
        b.peer = a
        return (a, b)
    }

    private init(loop: EventLoop) {
        self.loop = loop
        idle = .allocate(capacity: 1)
        uv_idle_init(loop.uvLoop, idle)
        idle.pointee.data = Unmanaged.passUnretained(self).toOpaque()
    }

    deinit {
        capPlace?.release()
        uv_idle_stop(idle)
        idle.pointee.data = nil
        uv_close(pb_idle_as_handle(idle)) { h in h?.deallocate() }
        if !closed, let peer { peer.peerDidClose() }
        inbound.free()
    }

    /// True once this end closed (`close()`, or the session above it closed).
    var isClosed: Bool { closed }
    /// True once the other end closed: it reads nothing more, and this end reads EOF after what is buffered.
    var peerHasClosed: Bool { peerClosed || peer == nil }

    // MARK: driving an end by hand

    /// Sends `bytes` to the other end as if written by a peer (any bytes: a preface, garbage, half a frame).
    func send(_ bytes: [UInt8]) {
        guard !closed, let peer, !peer.closed else { return }
        bytes.withUnsafeBytes { peer.inbound.append($0) }
        peer.updateIdle()
    }

    /// What the other end wrote since the last call (an end no session took collects it).
    func takeReceived() -> [UInt8] {
        let bytes = Array(inbound.bytes)
        inbound.removeAll()
        peer?.updateIdle()
        return bytes
    }

    /// Hangs up: nothing more is sent or read; the other end reads EOF after what it has buffered.
    public func close() { close(nil, notify: false) }

    // MARK: ByteTransport

    func startReading() {
        reading = true
        updateIdle()
    }

    func stopReading() {
        reading = false
        updateIdle()
    }

    func write(_ iov: UnsafeMutablePointer<uv_buf_t>, count: Int) -> WriteOutcome {
        if closed { return .failed }
        guard let peer, !peer.closed else {
            close(TransportError(kind: .connectionLost, code: Int32(UV_EPIPE.rawValue), function: "write"), notify: true)
            return .failed
        }
        pendingIov = iov
        pendingCount = count
        if copyPending(to: peer) { return .complete }
        return .pending
    }

    func peerName() -> String { "in-memory peer" }

    func close(_ error: TransportError?, notify: Bool) {
        if closed { return }
        closed = true
        capPlace?.release()
        capPlace = nil
        pendingIov = nil
        pendingCount = 0
        writeCompleted = false
        inbound.removeAll()
        updateIdle()
        peer?.peerDidClose()
        if notify, let o = owner { withExtendedLifetime(o) { o.transportDidClose(error) } }
    }

    // MARK: the work of one loop iteration

    private func peerDidClose() {
        peerClosed = true
        updateIdle()
    }

    /// Copies as much of the pending write as `peer` has room for; true when all of it went.
    private func copyPending(to peer: InMemoryTransport) -> Bool {
        while pendingCount > 0, let iov = pendingIov {
            let room = peer.bufferLimit - peer.inbound.count
            if room <= 0 { break }
            let n = min(room, iov.pointee.len)
            if n > 0 {
                peer.inbound.append(UnsafeRawBufferPointer(start: iov.pointee.base, count: n))
                iov.pointee.base += n
                iov.pointee.len -= n
            }
            if iov.pointee.len == 0 {
                pendingIov = iov + 1
                pendingCount -= 1
            }
        }
        peer.updateIdle()
        if pendingCount > 0 { return false }
        pendingIov = nil
        return true
    }

    private var hasWork: Bool {
        if closed { return false }
        if writeCompleted { return true }
        if pendingCount > 0, let peer, !peer.closed, peer.inbound.count < peer.bufferLimit { return true }
        guard reading, owner != nil else { return false }
        return inbound.count > 0 || peerHasClosed
    }

    private func updateIdle() {
        let want = hasWork
        if want == idleActive { return }
        idleActive = want
        if want {
            uv_idle_start(idle) { h in
                guard let data = h?.pointee.data else { return }
                Unmanaged<InMemoryTransport>.fromOpaque(data).takeUnretainedValue().service()
            }
        } else {
            uv_idle_stop(idle)
        }
    }

    /// One iteration's work: finish a pending write, deliver what arrived, then EOF once the peer is
    /// gone and everything it sent was read.
    private func service() {
        withExtendedLifetime(self) {
            if pendingCount > 0, let peer, !peer.closed, copyPending(to: peer) { writeCompleted = true }
            if writeCompleted {
                writeCompleted = false
                if let o = owner { withExtendedLifetime(o) { o.transportWriteDidComplete() } }
            }
            while !closed, reading, inbound.count > 0, let o = owner {
                let n = min(inbound.count, max(readLimit, 1), loop.readBuffer.count)
                loop.readBuffer.copyMemory(from: UnsafeRawBufferPointer(rebasing: inbound.bytes[0..<n]))
                inbound.removeFirst(n)
                peer?.updateIdle()
                withExtendedLifetime(o) { o.transportDidRead(UnsafeRawBufferPointer(start: loop.readBuffer.baseAddress, count: n)) }
            }
            if !closed, reading, inbound.count == 0, peerHasClosed, owner != nil {
                close(TransportError(kind: .connectionLost, code: 0, function: "read"), notify: true)
            }
            updateIdle()
        }
    }
}

@available(*, unavailable) extension InMemoryTransport: Sendable {}

/// A growable FIFO of bytes: appended at the back, consumed from the front, capacity kept.
struct ByteQueue {
    private var base: UnsafeMutableRawPointer?
    private var capacity = 0
    private var head = 0
    private var tail = 0

    var count: Int { tail - head }

    var bytes: UnsafeRawBufferPointer { UnsafeRawBufferPointer(start: base.map { $0 + head }, count: count) }

    mutating func append(_ bytes: UnsafeRawBufferPointer) {
        let n = bytes.count
        if n == 0 { return }
        if tail + n > capacity {
            let live = count
            if live + n <= capacity, let base {
                // Enough room once what was read is dropped: slide the unread bytes to the front.
                base.copyMemory(from: base + head, byteCount: live)
            } else {
                var c = max(capacity, 4096)
                while c < live + n { c *= 2 }
                let nb = UnsafeMutableRawPointer.allocate(byteCount: c, alignment: 16)
                if let base {
                    nb.copyMemory(from: base + head, byteCount: live)
                    base.deallocate()
                }
                base = nb
                capacity = c
            }
            head = 0
            tail = live
        }
        (base! + tail).copyMemory(from: bytes.baseAddress!, byteCount: n)
        tail += n
    }

    mutating func removeFirst(_ n: Int) {
        head += n
        if head == tail { head = 0; tail = 0 }
    }

    mutating func removeAll() { head = 0; tail = 0 }

    func free() { base?.deallocate() }
}
