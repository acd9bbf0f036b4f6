/// How many devices an FCM topic reaches: the configured sizes (`--topic-subscribers NAME=N`), the
/// default for any other topic. What a topic send and a condition are counted against.
struct FCMTopicSizes {
    private let table: [(name: [UInt8], count: UInt64)]
    /// Devices of a topic not in the table.
    let defaultSize: UInt64

    /// Sizes by topic name, and the size of every other topic.
    init(_ sizes: [String: Int], default defaultSize: Int) {
        table = sizes.keys.sorted().map { (Array($0.utf8), UInt64(sizes[$0]!)) }
        self.defaultSize = UInt64(defaultSize)
    }

    /// Devices of topic `name` (bytes).
    func subscribers(_ name: UnsafeRawBufferPointer) -> UInt64 {
        for i in 0..<table.count {
            let e = table[i]
            if e.name.count == name.count, e.name.withUnsafeBytes({ $0.elementsEqual(name) }) { return e.count }
        }
        return defaultSize
    }
}
