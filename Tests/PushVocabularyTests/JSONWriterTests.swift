import Testing
@testable import PushVocabulary

@Suite struct JSONWriterTests {
    @Test func writesCompactTextWithCommasInTheRightPlaces() {
        var w = JSONWriter()
        w.object { o in
            o.member("requests", 3)
            o.member("by_status") { s in s.member("200", 2); s.member("410", UInt64(1)) }
            o.member("empty") { _ in }
            o.member("seconds", 0.25)
            o.member("whole", 2.0)
            o.member("ok", true)
            o.key("list")
            o.array { a in a.value("x"); a.value(-1); a.raw(#"{"a":[1.50]}"#) }
            o.member("quote\"d", "line\nbreak\\")
        }
        #expect(w.text == #"{"requests":3,"by_status":{"200":2,"410":1},"empty":{},"seconds":0.25,"whole":2.0,"ok":true,"list":["x",-1,{"a":[1.50]}],"quote\"d":"line\nbreak\\"}"#)
    }

    @Test func numbersPrintAsTheResultsFilesPrintThem() {
        #expect(JSONWriter.format(2) == "2.0")
        #expect(JSONWriter.format(-3) == "-3.0")
        #expect(JSONWriter.format(-0.0) == "-0.0")
        #expect(JSONWriter.format(1e15) == "1000000000000000.0")
        #expect(JSONWriter.format(1e16) == "1e+16")
        #expect(JSONWriter.format(0.1) == "0.1")
        #expect(JSONWriter.format(.nan) == "null")
        #expect(JSONWriter.format(.infinity) == "null")
    }

    @Test func whatItWritesReadsBackAsTheSameValue() throws {
        var w = JSONWriter()
        w.object { o in
            o.member("s", "é\u{1}\t")
            o.member("n", Int64.min)
            o.member("d", 1.5)
        }
        let v = try JSONValue.parse(w.bytes)
        #expect(v == .object([("s", .string("é\u{1}\t")), ("n", .int(Int64.min)), ("d", .double(1.5))]))
    }

    @Test func aValueReaderMistakeSaysWhere() {
        #expect(throws: JSONError.self) { try JSONValue.parse("{\n  \"a\": tru }") }
        do { _ = try JSONValue.parse("{\n  \"a\": tru }"); Issue.record("parsed") } catch {
            #expect(error.line == 2)
            #expect(error.description.hasPrefix("2:"))
        }
    }

    @Test func objectsByNameKeepTheLastOfARepeatedName() throws {
        let v = try JSONValue.parse(#"{"a": 1, "b": [true], "a": 2}"#)
        #expect(v.object?["a"] == .int(2))
        #expect(v.object?["b"]?.array?.first?.bool == true)
        #expect(JSONValue.int(1).object == nil)
    }
}
