import Testing
@testable import PushbenchCLI

/// `pushbench report RUN --slowest N` reads a `--log` file: requests ranked by corrected latency, push
/// lines of a pipeline's log passed over (even those with no latency), and a broken line named.
@Suite struct SlowestRequestsTests {
    static let header = "kind,seq,phase,thread,connection,stream,token,intended_us,sent_us,answered_us,latency_us,service_us,late_us,status,reason,attempt,request_bytes,response_bytes,push_id,pipeline_id,route,arrival"

    static func request(_ seq: Int, latency: Int) -> String {
        "request,\(seq),measured,0,1,\(2 * seq + 1),0,0,0,\(latency),\(latency),\(latency / 2),0,200,,0,100,50,,pb-0001-\(seq),,"
    }

    @Test func pushLinesArePassedOverEvenWithoutALatency() throws {
        let csv = [Self.header, Self.request(1, latency: 300), Self.request(2, latency: 900),
                   // A push naming no request of the run: no request times, no latency.
                   "arrival,-1,,,,,,,,5000,,,,200,,,,,,,apns,no_id",
                   "arrival,2,measured,,,,3,0,,950,950,,,200,,,,,,pb-0001-2,apns,delivered",
                   Self.request(3, latency: 500)].joined(separator: "\n") + "\n"
        let rows = try SlowestRequests.slowest(Substring(csv), count: 2)
        #expect(rows.map(\.sequence) == [2, 3])
        #expect(rows.map(\.latencyUs) == [900, 500])
    }

    @Test func aRequestLineWithoutALatencyIsNamed() {
        let csv = [Self.header, "request,1,measured,0,1,1,0,0,0,0,x,0,0,200,,0,100,50,,,,"].joined(separator: "\n")
        #expect { try SlowestRequests.slowest(Substring(csv), count: 1) } throws: {
            "\($0)" == "line 2: latency_us 'x' is not a whole number"
        }
    }
}
