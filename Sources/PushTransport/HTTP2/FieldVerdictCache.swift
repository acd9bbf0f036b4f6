import CNGHTTP2

/// A connection's classes of the header fields it has seen lately (``RequestMessageRules/FieldClass``),
/// keyed by the reference-counted buffers nghttp2 hands the header callback.
///
/// A field the client's HPACK encoder indexed (in the static or the dynamic table) comes back as the
/// same pair of name and value buffers on every request, so its bytes need not be judged again. An entry
/// holds a reference to both buffers for as long as it keeps their addresses: a buffer is never changed,
/// and one that is held is never freed, so no other bytes can come at a held address (the dynamic
/// table dropping an entry, and the allocator handing its block out again, cannot make an entry lie).
/// Static-table buffers are not counted by nghttp2 and live as long as the library.
///
/// Two entries per set, the set chosen by the name's buffer. A name whose kept value was never met
/// again (a :path or content-length the client does not index) keeps that entry and its later values
/// are not kept, so fields that change on every request cost no reference counting; a kept value that
/// was met again gives way to the name's next value (a token renewed). Between different names, an
/// entry used since the last miss in its set gets a second chance. At most ``heldBytes`` of names and
/// values are held, none longer than ``longestField``. Not thread-safe: one connection, one loop.
struct FieldVerdictCache {
    struct Entry {
        /// The buffers' addresses (0: no entry), compared as integers.
        var name: UInt
        var value: UInt
        var nameBase: UnsafePointer<UInt8>?
        var valueBase: UnsafePointer<UInt8>?
        var nameLength: Int32
        /// After the trimming the connection does (``HTTP2ServerConfiguration/trailingWhitespaceTrimmed``).
        var valueLength: Int32
        var verdict: RequestMessageRules.FieldClass
        /// What the name is, for the name's other values.
        var nameKind: RequestMessageRules.Name
        /// Kept or met since the last miss in its set.
        var used: Bool
        /// Met at least once since it was kept.
        var met: Bool

        static var empty: Entry { Entry(name: 0, value: 0, nameBase: nil, valueBase: nil, nameLength: 0, valueLength: 0,
                                 verdict: .init(kind: .malformed, pseudo: false, once: 0, sets: 0, contentLength: -1),
                                 nameKind: .invalid, used: false, met: false) }
    }

    static let sets = 16
    /// The most name and value bytes of one field kept.
    static let longestField = 512
    /// The most name and value bytes held by one connection's cache.
    static let heldBytes = 4096

    /// `sets` pairs of entries.
    let entries: UnsafeMutablePointer<Entry>
    /// Name and value bytes held now.
    let held: UnsafeMutablePointer<Int>

    init() {
        entries = .allocate(capacity: 2 * FieldVerdictCache.sets)
        entries.initialize(repeating: .empty, count: 2 * FieldVerdictCache.sets)
        held = .allocate(capacity: 1)
        held.initialize(to: 0)
    }

    /// The pair of entries where fields named by `name` are kept.
    @inline(__always) func set(_ name: OpaquePointer) -> UnsafeMutablePointer<Entry> {
        let key = UInt(bitPattern: name) &* 0x9E37_79B9_7F4A_7C15
        return entries + 2 * Int(truncatingIfNeeded: key >> 60)
    }

    /// The entry of `set` that holds the pair `name`, `value`, marked as met; nil when none does.
    @inline(__always) static func find(_ set: UnsafeMutablePointer<Entry>, _ name: OpaquePointer,
                                       _ value: OpaquePointer) -> UnsafeMutablePointer<Entry>? {
        let n = UInt(bitPattern: name), v = UInt(bitPattern: value)
        var e = set
        if e.pointee.value != v || e.pointee.name != n {
            e += 1
            if e.pointee.value != v || e.pointee.name != n { return nil }
        }
        e.pointee.used = true
        e.pointee.met = true
        return e
    }

    /// The entry of `set` that holds a value of the name `name` (its bytes and what it is), when one does.
    @inline(__always) static func named(_ set: UnsafeMutablePointer<Entry>, _ name: OpaquePointer) -> UnsafeMutablePointer<Entry>? {
        let n = UInt(bitPattern: name)
        if set.pointee.name == n { return set }
        if (set + 1).pointee.name == n { return set + 1 }
        return nil
    }

    /// Keeps a field that missed, in `set` (see the type's comment for when it does not).
    func offer(_ set: UnsafeMutablePointer<Entry>, name: OpaquePointer, value: OpaquePointer,
               _ n: UnsafePointer<UInt8>, _ nl: Int, _ v: UnsafePointer<UInt8>, _ vl: Int,
               _ nameKind: RequestMessageRules.Name, _ verdict: RequestMessageRules.FieldClass) {
        let a = set, b = set + 1, key = UInt(bitPattern: name)
        let e: UnsafeMutablePointer<Entry>
        if a.pointee.name == key || b.pointee.name == key {
            let same = a.pointee.name == key ? a : b
            if !same.pointee.met { return }
            e = same
        } else if a.pointee.name == 0 {
            e = a
        } else if b.pointee.name == 0 {
            e = b
        } else if !a.pointee.used {
            e = a
        } else if !b.pointee.used {
            e = b
        } else {
            a.pointee.used = false
            b.pointee.used = false
            return
        }
        let bytes = nl + vl
        let freed = e.pointee.name == 0 ? 0 : Int(e.pointee.nameLength) + Int(e.pointee.valueLength)
        if bytes > FieldVerdictCache.longestField || held.pointee - freed + bytes > FieldVerdictCache.heldBytes { return }
        nghttp2_rcbuf_incref(name)
        nghttp2_rcbuf_incref(value)
        release(e)
        e.pointee = Entry(name: key, value: UInt(bitPattern: value), nameBase: n, valueBase: v, nameLength: Int32(nl), valueLength: Int32(vl),
                          verdict: verdict, nameKind: nameKind, used: true, met: false)
        held.pointee += bytes
    }

    /// A field as the header callback hands it over: its bytes (the value without the trailing white
    /// space `trimming` names call for) and its class, kept or judged now (and kept if it qualifies).
    struct Field {
        var name: UnsafePointer<UInt8>
        var nameLength: Int
        var value: UnsafePointer<UInt8>
        var valueLength: Int
        var verdict: RequestMessageRules.FieldClass
    }

    /// The field of the buffers `nameBuffer` and `valueBuffer`; `trimming`: the names whose values
    /// lose their trailing spaces and tabs (``HTTP2ServerConfiguration/trailingWhitespaceTrimmed``).
    @inline(__always)
    func field(_ nameBuffer: OpaquePointer, _ valueBuffer: OpaquePointer, trimming: [[UInt8]]) -> Field {
        let set = set(nameBuffer)
        if let e = FieldVerdictCache.find(set, nameBuffer, valueBuffer) {
            return Field(name: e.pointee.nameBase!, nameLength: Int(e.pointee.nameLength),
                         value: e.pointee.valueBase!, valueLength: Int(e.pointee.valueLength), verdict: e.pointee.verdict)
        }
        // A name kept with another value is not read again.
        let name: UnsafePointer<UInt8>, namelen: Int, kind: RequestMessageRules.Name
        if let known = FieldVerdictCache.named(set, nameBuffer) {
            name = known.pointee.nameBase!
            namelen = Int(known.pointee.nameLength)
            kind = known.pointee.nameKind
        } else {
            let n = nghttp2_rcbuf_get_buf(nameBuffer)
            name = UnsafePointer(n.base!)
            namelen = n.len
            kind = RequestMessageRules.kind(name, namelen)
        }
        let v = nghttp2_rcbuf_get_buf(valueBuffer)
        let value = UnsafePointer<UInt8>(v.base!)
        var vl = v.len
        if vl > 0, value[vl - 1] == 0x20 || value[vl - 1] == 0x09, !trimming.isEmpty,
           trimming.contains(where: { $0.elementsEqual(UnsafeBufferPointer(start: name, count: namelen)) }) {
            while vl > 0 && (value[vl - 1] == 0x20 || value[vl - 1] == 0x09) { vl -= 1 }
        }
        let verdict = RequestMessageRules.classify(kind, value, vl)
        offer(set, name: nameBuffer, value: valueBuffer, name, namelen, value, vl, kind, verdict)
        return Field(name: name, nameLength: namelen, value: value, valueLength: vl, verdict: verdict)
    }

    /// Lets go of `e`'s buffers, if it holds any.
    private func release(_ e: UnsafeMutablePointer<Entry>) {
        guard e.pointee.name != 0 else { return }
        held.pointee -= Int(e.pointee.nameLength) + Int(e.pointee.valueLength)
        nghttp2_rcbuf_decref(OpaquePointer(bitPattern: e.pointee.name))
        nghttp2_rcbuf_decref(OpaquePointer(bitPattern: e.pointee.value))
        e.pointee = .empty
    }

    /// Lets go of every buffer held (the connection closed); the cache stays usable.
    func clear() {
        for i in 0..<2 * FieldVerdictCache.sets { release(entries + i) }
    }

    /// Lets go of every buffer held and frees the cache.
    func free() {
        clear()
        entries.deallocate()
        held.deallocate()
    }
}
