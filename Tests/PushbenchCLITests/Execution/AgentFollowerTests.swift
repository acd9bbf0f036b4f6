import Foundation
#if canImport(Glibc)
import Glibc
#endif
import PushMetrics
import Synchronization
import Testing
@testable import PushbenchCLI

/// The follower against stand-in agents on loopback (Python's http.server serving /state and
/// /seconds?after=N&limit=K from files the test writes): their seconds merged as they come, a long
/// backlog fetched page by page, an agent killed shown missing, an agent back on its port picked up
/// where it left off, and the end once every agent is done or the silent ones are given up on.
@Suite(.serialized) struct AgentFollowerTests {
    static let start = 1_796_400_000.002

    /// A stand-in agent: its files, its process, its port.
    final class FakeAgent {
        let dir: URL
        let process = Process()
        let port: Int

        static let script = """
            import http.server, json, os, sys
            root, port = sys.argv[1], int(sys.argv[2])
            class H(http.server.BaseHTTPRequestHandler):
                def do_GET(self):
                    with open(os.path.join(root, "requests.log"), "a") as log:
                        log.write(self.path + "\\n")
                    path, _, query = self.path.partition("?")
                    if path == "/state":
                        body = open(os.path.join(root, "state.json"), "rb").read()
                    elif path == "/seconds":
                        q = dict(p.split("=", 1) for p in query.split("&") if p)
                        after = int(q.get("after", "-1"))
                        lines = [l for l in open(os.path.join(root, "seconds.ndjson")).read().splitlines()
                                 if l and json.loads(l)["second"] > after]
                        # An agent of an older binary (the file ignore-limit) sends everything.
                        if "limit" in q and not os.path.exists(os.path.join(root, "ignore-limit")):
                            lines = lines[:int(q["limit"])]
                        body = "".join(l + "\\n" for l in lines).encode()
                    else:
                        self.send_error(404)
                        return
                    self.send_response(200)
                    self.send_header("Content-Length", str(len(body)))
                    self.end_headers()
                    self.wfile.write(body)
                def log_message(self, *a):
                    pass
            s = http.server.HTTPServer(("127.0.0.1", port), H)
            print(s.server_address[1], flush=True)
            s.serve_forever()
            """

        init(dir: URL? = nil, port: Int = 0) throws {
            self.dir = dir ?? FileManager.default.temporaryDirectory.appendingPathComponent("pb-fake-agent-\(UUID().uuidString)")
            try FileManager.default.createDirectory(at: self.dir, withIntermediateDirectories: true)
            if dir == nil {
                try Data().write(to: self.dir.appendingPathComponent("seconds.ndjson"))
                try Data(#"{"kind":"run","label":"agent","done":false}"#.utf8).write(to: self.dir.appendingPathComponent("state.json"))
            }
            process.executableURL = URL(fileURLWithPath: "/usr/bin/python3")
            process.arguments = ["-c", Self.script, self.dir.path, "\(port)"]
            let out = Pipe()
            process.standardOutput = out
            try process.run()
            var text = ""
            for _ in 0..<50 where !text.contains("\n") {
                let data = out.fileHandleForReading.availableData
                if data.isEmpty { break }
                text += String(decoding: data, as: UTF8.self)
            }
            self.port = try #require(Int(text.trimmingCharacters(in: .whitespacesAndNewlines)), "the stand-in agent named no port: \(text)")
        }

        var address: AgentAddress { try! AgentAddress("http://127.0.0.1:\(port)") }

        func write(seconds: ClosedRange<Int>, latency: Int64) throws {
            let lines = seconds.map { n -> String in
                let h = HdrHistogram.latencyMicroseconds()
                for k in 0..<100 { h.record(latency + Int64(k)) }
                return LiveSecond(interval: TimelineInterval(second: n, sent: 100, completed: 100, succeeded: 100, failed: 0,
                                                             transportErrors: 0, latency: h, serviceTime: h),
                                  startUnix: AgentFollowerTests.start).jsonLine() + "\n"
            }
            try Data(lines.joined().utf8).write(to: dir.appendingPathComponent("seconds.ndjson"))
        }

        func done() throws {
            try Data(#"{"kind":"run","label":"agent","done":true}"#.utf8).write(to: dir.appendingPathComponent("state.json"))
        }

        /// The paths with queries it was asked for, in order.
        func requests() -> [String] {
            ((try? String(contentsOf: dir.appendingPathComponent("requests.log"), encoding: .utf8)) ?? "")
                .split(separator: "\n").map(String.init)
        }

        func kill() {
            Glibc.kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
        }
    }

    @Test func secondsMergeAKilledAgentIsMissingAndPicksUpWhenBack() throws {
        let a = try FakeAgent(), b = try FakeAgent()
        defer { a.kill(); b.kill() }
        let got = Mutex<[LiveSecond]>([]), notes = Mutex<[String]>([])
        let follower = try AgentFollower([a.address, b.address], wait: 2, timeoutMilliseconds: 2_000,
                                         onSeconds: { s in got.withLock { $0 += s } }, onNote: { n in notes.withLock { $0.append(n) } })
        func taken() -> [LiveSecond] { got.withLock { list in defer { list = [] }; return list } }

        try a.write(seconds: 0...1, latency: 1_000)
        try b.write(seconds: 0...1, latency: 50_000)
        #expect(!follower.poll(now: Self.start + 1.5))
        let first = taken()
        #expect(first.map(\.interval.second) == [0, 1])
        #expect(first.allSatisfy { $0.agents == 2 && $0.missingAgents == [] && $0.interval.completed == 200 })
        // Half the requests of each second took 50 ms: the merged p99 is the slow agent's, exactly.
        #expect(first.first?.interval.latency.decode().valueAtPercentile(99) ?? 0 >= 50_000)

        b.kill()
        try a.write(seconds: 0...3, latency: 1_000)
        follower.poll(now: Self.start + 2.5)
        #expect(taken().isEmpty, "second 2 waits for the silent agent")
        #expect(notes.withLock { $0 }.contains { $0.hasPrefix("agent \(b.address.name) does not answer: ") }, "\(notes.withLock { $0 })")
        #expect(follower.status[1].answering == false && follower.status[0].answering == true)
        follower.poll(now: Self.start + 6)
        let missing = taken()
        #expect(missing.map(\.interval.second) == [2, 3])
        #expect(missing.allSatisfy { $0.agents == 1 && $0.missingAgents == [b.address.name] && $0.interval.completed == 100 })

        // a is done; b comes back on its port with seconds 0 to 5: 2 and 3 are too late, 4 and 5 merge
        // with nobody missing (a is not awaited after its last second).
        try a.done()
        follower.poll(now: Self.start + 6.5)
        #expect(follower.status[0].done && !follower.isComplete)
        let back = try FakeAgent(dir: b.dir, port: b.port)
        defer { back.kill() }
        try back.write(seconds: 0...5, latency: 2_000)
        follower.poll(now: Self.start + 6.6)
        #expect(notes.withLock { $0 }.contains("agent \(b.address.name) answers again"))
        let resumed = taken()
        #expect(resumed.map(\.interval.second) == [4, 5])
        #expect(resumed.allSatisfy { $0.agents == 1 && $0.missingAgents == [] })
        #expect(follower.lateSeconds == [0, 2])
        #expect(follower.status[1].after == 5)
        try back.done()
        #expect(follower.poll(now: Self.start + 7))
        #expect(follower.isComplete)
    }

    /// An agent that accepts connections but never answers fails its ask at the timeout, is named
    /// missing, and the others' seconds go out all the same.
    @Test func anAgentThatAcceptsButNeverAnswersTimesOut() throws {
        let a = try FakeAgent()
        defer { a.kill() }
        try a.write(seconds: 0...1, latency: 1_000)
        let mute = Process()
        mute.executableURL = URL(fileURLWithPath: "/usr/bin/python3")
        mute.arguments = ["-c", """
            import socket, time
            s = socket.socket(); s.bind(("127.0.0.1", 0)); s.listen(64)
            print(s.getsockname()[1], flush=True)
            kept = []
            end = time.time() + 60
            s.settimeout(1)
            while time.time() < end:
                try: kept.append(s.accept()[0])
                except OSError: pass
            """]
        let out = Pipe()
        mute.standardOutput = out
        try mute.run()
        defer { Glibc.kill(mute.processIdentifier, SIGKILL); mute.waitUntilExit() }
        let port = try #require(Int(String(decoding: out.fileHandleForReading.availableData, as: UTF8.self)
            .trimmingCharacters(in: .whitespacesAndNewlines)))
        let got = Mutex<[LiveSecond]>([])
        let follower = try AgentFollower([a.address, try AgentAddress("http://127.0.0.1:\(port)")], wait: 1, timeoutMilliseconds: 300,
                                         onSeconds: { s in got.withLock { $0 += s } }, onNote: { _ in })
        follower.poll(now: Self.start + 10)
        #expect(follower.status[1].answering == false)
        #expect(follower.status[1].lastError == "no answer within 300 ms", "\(follower.status[1])")
        let out2 = got.withLock { $0 }
        #expect(out2.map(\.interval.second) == [0, 1] && out2.allSatisfy { $0.missingAgents == ["127.0.0.1:\(port)"] })
    }

    /// An agent that never answers at all does not hold up the others' seconds beyond the wait, and a
    /// round of asks is bounded by the timeout whatever the agents do.
    @Test func anAgentThatNeverAnswersIsMissingFromTheStart() throws {
        let a = try FakeAgent()
        defer { a.kill() }
        try a.write(seconds: 0...2, latency: 1_000)
        let got = Mutex<[LiveSecond]>([])
        let silent = try AgentAddress("http://127.0.0.1:9")
        let follower = try AgentFollower([a.address, silent], wait: 1, timeoutMilliseconds: 2_000,
                                         onSeconds: { s in got.withLock { $0 += s } }, onNote: { _ in })
        follower.poll(now: Self.start + 10)
        let out = got.withLock { $0 }
        #expect(out.map(\.interval.second) == [0, 1, 2])
        #expect(out.allSatisfy { $0.missingAgents == ["127.0.0.1:9"] && $0.agents == 1 })
        #expect(follower.status[1].answering == false && follower.status[1].lastError != nil)
    }

    /// A dashboard that starts late on a long run catches up page by page: `limit` seconds an ask, the
    /// next page asked in the same round while a full one came, a bounded number of pages a round; an
    /// agent that said it is done is finished only once its last page came.
    @Test func aLongBacklogComesPageByPage() throws {
        let a = try FakeAgent()
        defer { a.kill() }
        try a.write(seconds: 0...29, latency: 1_000)
        try a.done()
        let got = Mutex<[LiveSecond]>([])
        let follower = try AgentFollower([a.address], wait: 1, timeoutMilliseconds: 2_000, pageLimit: 4, maxPages: 3,
                                         onSeconds: { s in got.withLock { $0 += s } }, onNote: { _ in })
        #expect(!follower.poll(now: Self.start + 100), "it said it is done, but 18 of its seconds are still to come")
        #expect(a.requests().filter { $0.hasPrefix("/seconds") }
                == ["/seconds?after=-1&limit=4", "/seconds?after=3&limit=4", "/seconds?after=7&limit=4"])
        #expect(got.withLock { $0 }.map(\.interval.second) == Array(0...11))
        #expect(!follower.poll(now: Self.start + 101))
        #expect(follower.status[0].after == 23)
        // 24 to 27 fill a page, 28 and 29 do not: the last page came, and it is done.
        #expect(follower.poll(now: Self.start + 102))
        #expect(got.withLock { $0 }.map(\.interval.second) == Array(0...29))
        #expect(got.withLock { $0 }.allSatisfy { $0.agents == 1 && $0.missingAgents == [] })
    }

    /// An agent of an older binary ignores `limit` and sends every second it kept: one ask takes it all.
    @Test func anAgentThatIgnoresTheLimitSendsEverythingInOnePage() throws {
        let a = try FakeAgent()
        defer { a.kill() }
        try Data().write(to: a.dir.appendingPathComponent("ignore-limit"))
        try a.write(seconds: 0...29, latency: 1_000)
        try a.done()
        let got = Mutex<[LiveSecond]>([])
        let follower = try AgentFollower([a.address], wait: 1, timeoutMilliseconds: 2_000, pageLimit: 4, maxPages: 3,
                                         onSeconds: { s in got.withLock { $0 += s } }, onNote: { _ in })
        #expect(follower.poll(now: Self.start + 100))
        #expect(a.requests().filter { $0.hasPrefix("/seconds") } == ["/seconds?after=-1&limit=4"])
        #expect(got.withLock { $0 }.map(\.interval.second) == Array(0...29))
    }

    /// An agent killed for good never says it is done: once the others are, and it has been silent for
    /// the give-up time, the merge ends without it, naming it missing in the seconds it did not send.
    @Test func aSilentAgentIsGivenUpOnOnceTheOthersAreDone() throws {
        let a = try FakeAgent(), b = try FakeAgent()
        defer { a.kill(); b.kill() }
        try a.write(seconds: 0...3, latency: 1_000)
        try b.write(seconds: 0...1, latency: 1_000)
        let got = Mutex<[LiveSecond]>([]), notes = Mutex<[String]>([])
        let follower = try AgentFollower([a.address, b.address], wait: 30, giveUp: 5, timeoutMilliseconds: 2_000,
                                         onSeconds: { s in got.withLock { $0 += s } }, onNote: { n in notes.withLock { $0.append(n) } })
        #expect(!follower.poll(now: Self.start + 2))
        #expect(got.withLock { $0 }.map(\.interval.second) == [0, 1])
        b.kill()
        try a.done()
        #expect(!follower.poll(now: Self.start + 3), "b has just gone silent")
        #expect(follower.status[0].done && follower.status[1].answering == false)
        #expect(!follower.poll(now: Self.start + 7.9), "silent for less than 5 s")
        #expect(follower.poll(now: Self.start + 8))
        #expect(follower.status[1].gaveUp && !follower.status[0].gaveUp)
        #expect(notes.withLock { $0 }.contains("agent \(b.address.name) has not answered for 5s and every other agent is done: "
                                               + "giving up on it (named missing in the seconds it did not send)"), "\(notes.withLock { $0 })")
        let all = got.withLock { $0 }
        #expect(all.map(\.interval.second) == [0, 1, 2, 3])
        #expect(all.suffix(2).allSatisfy { $0.agents == 1 && $0.missingAgents == [b.address.name] })
    }

    /// The decision alone: nothing is given up while no agent is done, or while one that is not done
    /// still answers; once one is done, those silent for the give-up time are.
    @Test func whenToGiveUp() throws {
        var agents = try ["http://a:1", "http://b:2", "http://c:3"].map { AgentFollower.Agent(address: try AgentAddress($0)) }
        agents[1].silentSince = 100
        agents[2].silentSince = 104
        #expect(AgentFollower.givingUp(agents, finished: [false, false, false], now: 10_000, after: 10) == [])
        #expect(AgentFollower.givingUp(agents, finished: [true, false, false], now: 113.9, after: 10) == [], "c silent for 9.9 s")
        #expect(AgentFollower.givingUp(agents, finished: [true, false, false], now: 114, after: 10) == [1, 2])
        #expect(AgentFollower.givingUp(agents, finished: [true, true, false], now: 114, after: 10) == [2])
        agents[2].silentSince = nil
        #expect(AgentFollower.givingUp(agents, finished: [true, false, false], now: 10_000, after: 10) == [], "c answers: its run goes on")
    }
}
