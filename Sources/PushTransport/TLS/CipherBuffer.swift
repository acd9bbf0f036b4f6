/// A growable ciphertext buffer that keeps its capacity (it grows only at a new high-water mark).
struct CipherBuffer {
    private(set) var base: UnsafeMutableRawPointer?
    private var capacity = 0
    var count = 0

    mutating func append(_ p: UnsafeRawPointer, _ n: Int) {
        if count + n > capacity {
            var c = max(capacity, 16 * 1024)
            while c < count + n { c *= 2 }
            let nb = UnsafeMutableRawPointer.allocate(byteCount: c, alignment: 16)
            if let base {
                nb.copyMemory(from: base, byteCount: count)
                base.deallocate()
            }
            base = nb
            capacity = c
        }
        (base! + count).copyMemory(from: p, byteCount: n)
        count += n
    }

    func free() { base?.deallocate() }

    /// Deallocates an empty buffer's memory (the next append allocates again).
    mutating func release() {
        guard count == 0, let base else { return }
        base.deallocate()
        self.base = nil
        capacity = 0
    }
}
