import Foundation
import Testing
@testable import LoadGenerator

/// The FCM message id read from a send's answer for the `--log` file's `push_id` column.
@Suite struct LoggedPushIDTests {
    static func id(_ body: String) -> String {
        var b = body
        return b.withUTF8 { LoggedPushID(fcmAnswer: UnsafeRawBufferPointer($0)) }.text
    }

    @Test func theIDIsWhatFollowsMessagesInTheName() {
        #expect(Self.id(#"{"name":"projects/p1/messages/0:1500415314455276%31bd1c9631bd1c96"}"#) == "0:1500415314455276%31bd1c9631bd1c96")
        // Spaces and newlines as a pretty-printing service sends them; other keys before the name.
        #expect(Self.id("{\n  \"other\": 1,\n  \"name\" : \"projects/my-app/messages/abc\"\n}\n") == "abc")
        // A project that itself contains "messages" does not confuse the split.
        #expect(Self.id(#"{"name":"projects/messages/messages/42"}"#) == "42")
        // A name without /messages/ is kept whole.
        #expect(Self.id(#"{"name":"plain-id"}"#) == "plain-id")
    }

    @Test func anAnswerWithoutANameGivesNoID() {
        for body in ["", "{}", #"{"error":{"code":404}}"#, #"{"name":12}"#, #"{"name":""}"#, #"{"name":"projects/p/messages/"#,
                     #"{"nam"#] {
            #expect(Self.id(body).isEmpty, "\(body)")
        }
    }

    @Test func bytesACSVFieldTripsOnAreReplacedAndALongIDIsCut() {
        #expect(Self.id("{\"name\":\"projects/p/messages/a,b c\u{e9}\"}") == "a?b?c??")
        let long = String(repeating: "7", count: 100)
        #expect(Self.id(#"{"name":"projects/p/messages/\#(long)"}"#) == String(repeating: "7", count: LoggedPushID.capacity))
        #expect(LoggedPushID("0:1%ab") == LoggedPushID("0:1%ab") && LoggedPushID("0:1%ab") != LoggedPushID("0:2%ab"))
        #expect(LoggedPushID().isEmpty && !LoggedPushID("x").isEmpty)
    }

    @Test func theLogWritesTheIDInPushIDWithoutAPNsIDs() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("pushbench-test-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        let file = dir.appendingPathComponent("log.csv")
        let log = try RequestLog(path: file.path, threads: 1, filter: RequestLogFilter(), seed: 1, apnsIDs: false)
        var withID = RequestLogTests.record(0)
        withID.pushID = LoggedPushID("0:7%00ff")
        #expect(log.rings[0].push(withID))
        #expect(log.rings[0].push(RequestLogTests.record(1)))
        log.finish()
        let rows = try RequestLogTests.rows(file)
        let column = try #require(rows[0].firstIndex(of: "push_id"))
        #expect(rows[1][column] == "0:7%00ff")
        #expect(rows[2][column] == "" && rows[2].count == rows[0].count)
    }
}
