import Foundation
import PushVocabulary
import Testing
@testable import PushMetrics

@Suite struct HistogramCodecTests {
    static func sample() -> HdrHistogram {
        let h = HdrHistogram.latencyMicroseconds()
        h.record(1)
        h.record(2)
        h.record(1_000)
        h.record(1_000_000, count: 3)
        return h
    }

    @Test func blobMatchesTheGoldenEncoding() throws {
        let text = HistogramCodec.encodeBase64(Self.sample())
        try Golden.check(text + "\n", "histogram-blob.txt")
        #expect(text.hasPrefix("HISTFAAA"))
        let bytes = HistogramCodec.encodeCompressed(Self.sample())
        #expect(Array(bytes[0..<4]) == [0x1c, 0x84, 0x93, 0x14])
        #expect(Int(HistogramCodec.readBE32(bytes, 4)) == bytes.count - 8)
        #expect(Array(bytes[8..<10]) == [0x78, 0xDA]) // zlib, best compression
        let inner = try HistogramCodec.inflate(Array(bytes[8...]))
        #expect(Array(inner[0..<4]) == [0x1c, 0x84, 0x93, 0x13])
        #expect(HistogramCodec.readBE32(inner, 12) == 3)
        #expect(HistogramCodec.readBE64(inner, 16) == 1)
        #expect(HistogramCodec.readBE64(inner, 24) == 3_600_000_000)
        #expect(HistogramCodec.readBE64(inner, 32) == (1.0 as Double).bitPattern)
        // counts: index 0 empty, 1 and 2 hold one each, then a zero run up to 1000's bucket.
        #expect(Array(inner[40..<43]) == [0x00, 0x02, 0x02])
        #expect(Int(HistogramCodec.readBE32(inner, 4)) == inner.count - 40)
    }

    @Test func roundTripKeepsEveryCount() throws {
        for (name, values) in Distributions.all() {
            let h = HdrHistogram.latencyMicroseconds()
            for v in values { h.record(v) }
            let back = try HistogramCodec.decode(base64: HistogramCodec.encodeBase64(h))
            #expect(back.hasSameCounts(as: h), "\(name)")
            #expect(back.min == h.min && back.max == h.max, "\(name)")
            #expect(back.valueAtPercentile(99.9) == h.valueAtPercentile(99.9), "\(name)")
        }
        let empty = try HistogramCodec.decode(base64: HistogramCodec.encodeBase64(HdrHistogram.latencyMicroseconds()))
        #expect(empty.totalCount == 0 && empty.max == 0)
        // Another layout (nanoseconds, 2 digits) survives too.
        let ns = try HdrHistogram(lowestDiscernibleValue: 1000, highestTrackableValue: 3_600_000_000_000, significantDigits: 2)
        ns.record(123_456_789)
        let nsBack = try HistogramCodec.decode(compressed: HistogramCodec.encodeCompressed(ns))
        #expect(nsBack.hasSameCounts(as: ns) && nsBack.significantDigits == 2 && nsBack.lowestDiscernibleValue == 1000)
    }

    @Test func zigZagVarintsRoundTripAtEveryWidth() throws {
        let values: [Int64] = [0, 1, -1, 63, -64, 64, 8191, 8192, 1 << 20, -(1 << 27), 1 << 48, (1 << 55) - 1, 1 << 56, Int64.max, Int64.min + 1]
        for v in values {
            var buf: [UInt8] = []
            HistogramCodec.putZigZag(&buf, v)
            #expect(buf.count <= 9)
            var pos = 0
            #expect(try HistogramCodec.getZigZag(buf, &pos, buf.count) == v, "\(v)")
            #expect(pos == buf.count)
        }
    }

    @Test func badBlobsAreRejectedWithAReason() {
        func reason(_ text: String) -> String {
            do { _ = try HistogramCodec.decode(base64: text); return "accepted" } catch { return "\(error)" }
        }
        let good = HistogramCodec.encodeCompressed(Self.sample())
        func b64(_ bytes: [UInt8]) -> String { Data(bytes).base64EncodedString() }
        #expect(reason("not base64!") == "not valid base64")
        #expect(reason(b64([1, 2, 3])) == "blob shorter than its 8-byte header")
        var wrongCookie = good
        wrongCookie[3] = 0x99
        #expect(reason(b64(wrongCookie)).hasPrefix("bad compression cookie 0x1c849399"))
        #expect(reason(b64(Array(good.dropLast()))).hasPrefix("compressed length field says"))
        var corrupt = good
        corrupt[12] ^= 0xFF
        corrupt[13] ^= 0xFF
        #expect(reason(b64(corrupt)).contains("zlib"))
    }

    @Test func badInnerPayloadsAreRejectedWithAReason() {
        func inner(digits: UInt32 = 3, highest: UInt64 = 3_600_000_000, counts: [UInt8]) -> [UInt8] {
            var b: [UInt8] = []
            HistogramCodec.appendBE(&b, UInt32(0x1c84_9313))
            HistogramCodec.appendBE(&b, UInt32(counts.count))
            HistogramCodec.appendBE(&b, UInt32(0))
            HistogramCodec.appendBE(&b, digits)
            HistogramCodec.appendBE(&b, UInt64(1))
            HistogramCodec.appendBE(&b, highest)
            HistogramCodec.appendBE(&b, (1.0 as Double).bitPattern)
            return b + counts
        }
        func reason(_ b: [UInt8]) -> String {
            do { _ = try HistogramCodec.decode(uncompressed: b); return "accepted" } catch { return "\(error)" }
        }
        #expect(reason(inner(counts: [0x02, 0x04])) == "accepted")
        #expect(reason(inner(digits: 9, counts: [])) == "header: significantDigits must be 1...5, got 9")
        #expect(reason(inner(counts: [0x80])) == "counts end in the middle of a varint")
        // A zero run (ZigZag of -100000 = 199999) longer than the 23552 buckets.
        var run: [UInt8] = []
        HistogramCodec.putZigZag(&run, -100_000)
        #expect(reason(inner(counts: run)) == "zero run of 100000 overruns the 23552 buckets")
        #expect(reason(Array(inner(counts: []).prefix(20))) == "inflated payload shorter than its 40-byte header")
    }
}

@Suite struct IntervalLogTests {
    @Test func readerFollowsHdrHistogramRules() throws {
        let blob = HistogramCodec.encodeBase64(HistogramCodecTests.sample())
        let text = """
        #[Logged with something else]
        #[Histogram log format version 1.3]
        #[StartTime: 1795953600.250 (seconds since epoch), Sun Nov 29 12:00:00 UTC 2026]
        "StartTimestamp","Interval_Length","Interval_Max","Interval_Compressed_Histogram"
        0.000,1.000,1000.447,\(blob)
        Tag=other,0.000,1.000,1000.447,\(blob)
        1.000,0.500,1000.447,\(blob)\r

        """
        let log = try IntervalLog.parse(text)
        // No BaseTime and timestamps far before StartTime: they are relative to StartTime.
        #expect(log.startTime == 1_795_953_600.25)
        #expect(log.baseTime == 1_795_953_600.25)
        #expect(log.intervals.count == 3)
        #expect(log.intervals.map(\.tag) == [nil, "other", nil])
        #expect(log.intervals[2].length == 0.5)
        #expect(log.intervals[0].histogram.totalCount == 6)

        let absolute = try IntervalLog.parse("#[StartTime: 1795953600.000 (seconds since epoch), x]\n1795953601.000,1.000,1.0,\(blob)\n")
        #expect(absolute.baseTime == 0)
        #expect(absolute.intervals[0].startOffset == 1_795_953_601)
    }

    @Test func writerOutputParsesBack() throws {
        var log = IntervalLog(startTime: 1_795_953_600.123)
        log.intervals = [.init(startOffset: 0, length: 1, histogram: EncodedHistogram(HistogramCodecTests.sample())),
                         .init(tag: "svc", startOffset: 1, length: 1, histogram: EncodedHistogram(HdrHistogram.latencyMicroseconds()))]
        let text = log.render(comment: "Logged with pushbench test")
        let lines = text.split(separator: "\n")
        #expect(lines[0] == "#[Logged with pushbench test]")
        #expect(lines[1] == "#[Histogram log format version 1.3]")
        #expect(lines[2] == "#[StartTime: 1795953600.123 (seconds since epoch), Sun Nov 29 12:00:00 GMT 2026]")
        #expect(lines[3] == "#[BaseTime: 1795953600.123 (seconds since epoch)]")
        #expect(lines[4] == "\"StartTimestamp\",\"Interval_Length\",\"Interval_Max\",\"Interval_Compressed_Histogram\"")
        #expect(lines[5].hasPrefix("0.000,1.000,1000.447,HISTFAAA"))
        #expect(lines[6].hasPrefix("Tag=svc,1.000,1.000,0.000,HISTFAAA"))
        let back = try IntervalLog.parse(text)
        #expect(back.intervals == log.intervals)
        #expect(abs(back.startTime - log.startTime) < 0.001)
    }

    @Test func malformedLinesAreNamed() {
        func reason(_ t: String) -> String {
            do { _ = try IntervalLog.parse(t); return "accepted" } catch { return "\(error)" }
        }
        #expect(reason("#c\n1.0,2.0\n") == "line 2: expected start,length,max,histogram")
        #expect(reason("Tag=x\n") == "line 1: Tag= without a comma")
        #expect(reason("0.0,1.0,1.0,HISTFAAAbroken\n").hasPrefix("line 1: histogram:"))
    }
}

@Suite struct JSONValueTests {
    @Test func parsesAndPrintsInOrder() throws {
        let text = #"{"b": 1, "a": [true, false, null, -2.5e3, "x\"\n\u00e9\ud83d\ude00\u0001\b"], "c": {"d": 9007199254740993}}"#
        let v = try JSONValue.parse(text)
        #expect(v.members.map(\.0) == ["b", "a", "c"])
        #expect(v["a"] == .array([.bool(true), .bool(false), .null, .double(-2500), .string("x\"\né😀\u{1}\u{8}")]))
        #expect(JSONValue.string("\u{1}\u{8}\t\"").render() == #""\u0001\b\t\""\#n"#)
        #expect(v.value(atPath: "c.d")?.integer == 9_007_199_254_740_993)
        #expect(try JSONValue.parse(v.render()) == v)
    }

    @Test func errorsSayWhere() {
        func reason(_ t: String) -> String {
            do { _ = try JSONValue.parse(t); return "accepted" } catch { return "\(error)" }
        }
        #expect(reason("{\"a\": 1,\n \"b\" 2}") == "2:6: expected ':' after an object key")
        #expect(reason("[1, 2") == "1:6: unexpected end of input")
        #expect(reason("{} x") == "1:4: unexpected data after the JSON value")
        #expect(reason("\"abc") == "1:1: unterminated string")
        #expect(reason("{\"a\": NaN}") == "1:7: expected a JSON value")
    }
}
