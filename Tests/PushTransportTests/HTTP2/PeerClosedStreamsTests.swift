@testable import PushTransport
import Testing

/// The frame-header scan that finds DATA or HEADERS on a stream the client already closed its side of.
@Suite struct PeerClosedStreamsTests {
    static let preface = Array("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".utf8)

    static func frame(_ type: UInt8, _ flags: UInt8, _ stream: UInt32, payload: Int = 0) -> [UInt8] {
        [UInt8(payload >> 16 & 0xFF), UInt8(payload >> 8 & 0xFF), UInt8(payload & 0xFF), type, flags,
         UInt8(stream >> 24 & 0x7F), UInt8(stream >> 16 & 0xFF), UInt8(stream >> 8 & 0xFF), UInt8(stream & 0xFF)]
            + [UInt8](repeating: 0xEE, count: payload)
    }
    static func headers(_ id: UInt32, end: Bool, payload: Int = 12) -> [UInt8] { frame(1, end ? 0x5 : 0x4, id, payload: payload) }
    static func data(_ id: UInt32, end: Bool, payload: Int = 30) -> [UInt8] { frame(0, end ? 0x1 : 0, id, payload: payload) }
    static func rst(_ id: UInt32) -> [UInt8] { frame(3, 0, id, payload: 4) }
    static let settings = frame(4, 0, 0, payload: 6)

    func scan(_ bytes: [UInt8], into p: inout PeerClosedStreams) -> Int? {
        bytes.withUnsafeBytes { p.scan($0) }
    }

    @Test func aNormalConnectionNeverOffends() {
        var p = PeerClosedStreams()
        var input = Self.preface + Self.settings
        for id in stride(from: UInt32(1), through: 4001, by: 2) {
            input += Self.headers(id, end: false) + Self.data(id, end: true)
        }
        #expect(scan(input, into: &p) == nil)
        #expect(p.highest == 4001)
    }

    @Test(arguments: ["data", "headers"])
    func aFrameAfterTheClientsEndStreamOffendsAtItsOffset(kind: String) {
        var p = PeerClosedStreams()
        let before = Self.preface + Self.settings + Self.headers(1, end: false) + Self.data(1, end: true) + Self.headers(3, end: true)
        let late = kind == "data" ? Self.data(1, end: true) : Self.headers(1, end: true)
        #expect(scan(before + late + Self.headers(5, end: true), into: &p) == before.count)
    }

    @Test func aFrameAfterTheClientsResetOffends() {
        var p = PeerClosedStreams()
        let before = Self.preface + Self.headers(1, end: false) + Self.rst(1)
        #expect(scan(before + Self.data(1, end: false), into: &p) == before.count)
    }

    /// The server reset the stream before the client ended it: the client's frames in flight are not an error.
    @Test func framesOnAStreamTheClientNeverEndedAreLeftAlone() {
        var p = PeerClosedStreams()
        #expect(scan(Self.preface + Self.headers(1, end: false) + Self.data(1, end: false) + Self.headers(3, end: true)
                     + Self.data(1, end: true), into: &p) == nil)
    }

    @Test func idsTheClientSkippedAndNeverUsedAreLeftAlone() {
        var p = PeerClosedStreams()
        // Stream 2049 reuses the bit of stream 1, which ended; 2047 was skipped (its bit is stream -1's).
        var input = Self.preface + Self.headers(1, end: true) + Self.headers(3, end: true)
        input += Self.headers(2049, end: false)
        input += Self.data(2049, end: false) + Self.data(5, end: false)
        #expect(scan(input, into: &p) == nil)
    }

    @Test func streamsOlderThanTheWindowAreLeftAlone() {
        var p = PeerClosedStreams()
        var input = Self.preface
        for id in stride(from: UInt32(1), through: 2049, by: 2) { input += Self.headers(id, end: true) }
        #expect(scan(input + Self.data(1, end: true), into: &p) == nil, "stream 1 is 2,048 ids back")
        #expect(scan(Self.data(3, end: true), into: &p) != nil, "stream 3 is within the window")
    }

    /// Frame headers and the preface split anywhere across reads, one byte at a time.
    @Test func headersSplitAcrossReadsAreFollowed() {
        var p = PeerClosedStreams()
        let input = Self.preface + Self.settings + Self.headers(1, end: true, payload: 40) + Self.headers(3, end: false)
            + Self.data(3, end: true, payload: 5) + Self.data(1, end: false)
        var found: Int?
        var offset = 0
        for byte in input {
            if let cut = scan([byte], into: &p) { found = offset + cut; break }
            offset += 1
        }
        // The header began in earlier reads, so the cut is at the start of the read that completes it.
        #expect(found == input.count - 39 + 8, "found \(String(describing: found))")
    }

    @Test func evenStreamsAndTheConnectionAreNotStreamsOfTheClient() {
        var p = PeerClosedStreams()
        #expect(scan(Self.preface + Self.headers(1, end: true) + Self.frame(8, 0, 0, payload: 4) + Self.data(2, end: true)
                     + Self.frame(6, 0, 0, payload: 8), into: &p) == nil)
    }
}
