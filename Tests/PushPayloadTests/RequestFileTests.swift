import Testing
@testable import PushPayload

/// The `.http` request file and the pipeline placeholders.
@Suite struct RequestFileTests {
    func parse(_ text: String) throws(TemplateError) -> RequestFile {
        try RequestFile(bytes: Array(text.utf8), file: "notify.http")
    }

    @Test func readsARequestAsRESTClientsWriteIt() throws {
        let r = try parse("""
            # send one notification
            ### first
            POST http://localhost:9000/notify?x=1 HTTP/1.1
            Content-Type: application/json
            X-Tenant:  acme
            Content-Length: 99
            Host: example

            {"id":"{{pipeline_id}}","tokens":{{tokens:2}}}

            ###
            GET /ignored
            """)
        #expect(r.method == "POST" && r.path == "/notify?x=1")
        #expect(r.headers.map(\.name) == ["Content-Type", "X-Tenant"] && r.headers[1].value == "acme")
        #expect(String(decoding: r.body, as: UTF8.self) == #"{"id":"{{pipeline_id}}","tokens":{{tokens:2}}}"#)
        #expect(r.bodyLine == 9)
    }

    @Test func badFilesNameTheLineAndTheReason() {
        func reason(_ text: String) -> String {
            do { _ = try parse(text); return "parsed" } catch { return error.description }
        }
        #expect(reason("") == "notify.http: no request line (expected 'METHOD /path', e.g. 'POST /notify HTTP/1.1')")
        #expect(reason("POST") .hasPrefix("notify.http:1:1: 'POST' is not a request line"))
        #expect(reason("post /x").contains("'post' is not an HTTP method"))
        #expect(reason("POST notify").contains("must start with '/'"))
        #expect(reason("POST /x HTTQ").contains("is not an HTTP version"))
        #expect(reason("POST /x\nContent-Type application/json\n\n{}").hasPrefix("notify.http:2:1: 'Content-Type application/json' is not a header line"))
        #expect(reason("POST /x/{{pipeline_id}}").contains("placeholders belong in the body"))
    }

    @Test func templateErrorsPointAtTheFilesLines() throws {
        let r = try parse("POST /notify\ncontent-type: application/json\n\n{\"id\":\"{{pipeline_id}}\",\n \"n\": {{nope}}}")
        #expect(throws: TemplateError.self) { _ = try r.template(options: .init(limit: nil)) }
        do { _ = try r.template(options: .init(limit: nil)) } catch {
            #expect(error.line == 5 && error.reason.contains("unknown placeholder {{nope}}"))
        }
    }

    @Test func pipelineIDAndTokenListExpandTheSameInEveryEncoder() throws {
        let t = try PayloadTemplate(text: #"{"id":"{{pipeline_id}}","tokens":{{tokens:3}},"n":{{seq}}}"#, options: .init(limit: nil))
        #expect(t.hasPipelineID && t.fanOut == 3)
        let tokens = DeviceTokens(synthetic: 5, seed: 1)
        let prefix = PipelineID.prefix(tag: 0x7f3a)
        #expect(String(decoding: prefix, as: UTF8.self) == "pb-7f3a-")
        var outputs: [String] = []
        for variant in [EncoderVariant.zerocopy, .copy, .foundation] {
            let encoder = makePayloadEncoder(variant, template: t)
            let text = prefix.withUnsafeBytes { p -> String in
                let ctx = RequestContext(seq: 4, messageID: PushUUID(high: 1, low: 2), pipelinePrefix: p, tokens: tokens)
                let slot = UnsafeMutableRawBufferPointer.allocate(byteCount: 4096, alignment: 16)
                defer { slot.deallocate() }
                let n = encoder.encode(ctx, into: slot)!
                #expect(n == t.encodedLength(ctx))
                return String(decoding: UnsafeRawBufferPointer(rebasing: slot[0..<n]), as: UTF8.self)
            }
            outputs.append(text)
        }
        #expect(outputs[0] == outputs[1] && outputs[1] == outputs[2])
        // Request 4 of a fan-out of 3 over 5 tokens: tokens 12, 13, 14 mod 5.
        let expected = #"{"id":"pb-7f3a-000000004","n":4,"tokens":[""# + [2, 3, 4].map { String(decoding: tokens.token($0), as: UTF8.self) }
            .joined(separator: #"",""#) + #""]}"#
        #expect(outputs[0] == expected)
        #expect(PipelineID.text(prefix: prefix, index: 1_234_567_890) == "pb-7f3a-1234567890")
    }

    @Test func placeholdersAreWrittenWhereTheyBelong() {
        func reason(_ text: String) -> String {
            do { _ = try PayloadTemplate(text: text, options: .init(limit: nil)); return "compiled" } catch { return error.reason }
        }
        #expect(reason(#"{"t":"{{tokens:2}}"}"#).contains("write it bare"))
        #expect(reason(#"{"t":{{tokens:0}}}"#).contains("bad {{tokens:N}}"))
        #expect(reason(#"{"t":{{tokens:x}}}"#).contains("bad {{tokens:N}}"))
        #expect(reason(#"{"id":{{pipeline_id}}}"#).contains("string placeholder"))
        #expect(reason(#"{"id":"{{pipeline_id}}","t":{{tokens:2}}}"#) == "compiled")
    }

    @Test func arrivalsTextRoundTrips() {
        let lines = [PipelineArrivalsText.Line(index: 123, unixNs: 1_796_000_000_123_456_789, route: 0, status: 200, token: 42),
                     PipelineArrivalsText.Line(index: PushArrival.noID, unixNs: 5, route: 1, status: 0)]
        let text = PipelineArrivalsText.render(prefix: "pb-7f3a-", lines)
        #expect(text.hasPrefix("# pushbench pipeline arrivals pb-7f3a-\n123 1796000000123456789 0 200 42\n"))
        // A line without the token's fingerprint reads as one with none.
        #expect(PipelineArrivalsText.parse("# pushbench pipeline arrivals pb-7f3a-\n1 2 0 200\n")?.lines
                == [PipelineArrivalsText.Line(index: 1, unixNs: 2, route: 0, status: 200)])
        let back = PipelineArrivalsText.parse(text)
        #expect(back?.prefix == "pb-7f3a-" && back?.lines == lines)
        #expect(PipelineArrivalsText.parse("{\"requests\":0}") == nil)
        #expect(PipelineArrivalsText.parse("# pushbench pipeline arrivals pb-7f3a-\n1 2 x 4\n") == nil)
    }
}
