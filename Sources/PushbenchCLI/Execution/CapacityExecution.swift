import Foundation
import LoadGenerator
import PushMetrics
import PushPayload
import PushVocabulary

/// One `pushbench capacity`: the steps of the search, each a measured run written to its own folder, then
/// capacity.json, capacity.md and capacity.svg, and the answer in one line.
struct CapacityExecution {
    let command: CapacityCommand

    private var options: CapacityOptions { command.options }
    private var base: RunOptions { command.stepOptions }

    /// A step as run: its number, rate, folder name, record and what the search made of it.
    struct StepRun {
        var number: Int
        var folder: String
        var record: RunRecord
        var step: CapacityStep
        var verdict: CapacityVerdict
    }

    func execute() -> Int32 {
        do {
            return try search()
        } catch {
            printError("pushbench capacity: \(error.message)")
            return error.status
        }
    }

    private func say(_ line: String) {
        if base.json { printError(line) } else if !base.quiet { printOut(line) }
    }

    private func search() throws(RunExecution.Failure) -> Int32 {
        let inputs = try RunExecution(options: base).loadInputs()
        let label = command.labelGiven ? base.label : "capacity"
        let root = URL(fileURLWithPath: base.outputRoot)
        // Agents of one search (--segment) meet in one folder, named from their shared start time.
        var meeting: AgentMeeting?
        let startedAt: Date
        let folder: URL
        if let segment = base.segment, let at = base.startAtUnixNs {
            startedAt = Date(timeIntervalSince1970: Double(at) / 1e9)
            folder = root.appendingPathComponent(ResultsWriter.runID(startedAt: startedAt, label: label))
            do { try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true) } catch {
                throw RunExecution.Failure(status: 1, message: "\(folder.path): cannot create the folder: \(error.localizedDescription)")
            }
            meeting = AgentMeeting(folder: folder, index: segment.index, count: segment.count, nextStart: at,
                                   waitNs: UInt64((base.warmupSeconds + options.stepSeconds + 65) * 1e9))
        } else {
            startedAt = Date()
            folder = try Self.newFolder(root: root, id: ResultsWriter.runID(startedAt: startedAt, label: label))
        }
        say("capacity search: \(options.objectives.map(\.description).joined(separator: ", ")), "
            + "\(CapacitySearch.grouped(options.min))...\(CapacitySearch.grouped(options.max)) rps, "
            + "\(Self.seconds(base.warmupSeconds)) warm-up + \(Self.seconds(options.stepSeconds)) per step"
            + (options.repeats > 1 ? ", \(options.repeats) searches" : "") + "; \(folder.path)")
        let dashboard = try RunExecution(options: base).startDashboard(kind: "capacity", label: label, command: "capacity",
                                                                       stepSeconds: options.stepSeconds)
        defer { dashboard?.stop() }
        guard options.repeats > 1 else {
            let report = try searchOnce(inputs, folder: folder, meeting: &meeting, startedAt: startedAt, dashboard: dashboard)
            dashboard?.finish(summaryJSON: report.json.render())
            if base.json { printOut(report.json.render()) } else { printOut(report.sentence) }
            return conclude(folder: folder, junit: report.junit(suite: "pushbench capacity \(folder.lastPathComponent)"), markdown: report.markdown,
                            dashboard: dashboard)
        }
        let began = Date()
        var searches: [CapacityReport] = []
        for k in 1...options.repeats {
            // Each search in its own folder; agents go on meeting there, the next start carried over.
            let sub = folder.appendingPathComponent(CapacityRepeatReport.folderName(k))
            do { try FileManager.default.createDirectory(at: sub, withIntermediateDirectories: true) } catch {
                throw RunExecution.Failure(status: 1, message: "\(sub.path): cannot create the folder: \(error.localizedDescription)")
            }
            say("search \(k) of \(options.repeats): \(sub.path)")
            var m = meeting.map { AgentMeeting(folder: sub, index: $0.index, count: $0.count, nextStart: $0.nextStart, waitNs: $0.waitNs) }
            let report = try searchOnce(inputs, folder: sub, meeting: &m, startedAt: k == 1 ? startedAt : Date(), dashboard: dashboard,
                                        search: k)
            meeting = m
            say("search \(k) of \(options.repeats): \(report.sentence)")
            searches.append(report)
            if report.interrupted { break }
        }
        let repeated = CapacityRepeatReport(command: command, searches: searches, startedAt: startedAt,
                                            seconds: Date().timeIntervalSince(began))
        if meeting.map({ $0.index == 0 }) ?? true {
            do { try repeated.write(to: folder) } catch {
                throw RunExecution.Failure(status: 1, message: "cannot write the capacity report: \(error)")
            }
        }
        dashboard?.finish(summaryJSON: repeated.json.render())
        if base.json { printOut(repeated.json.render()) } else { printOut(repeated.line) }
        return conclude(folder: folder, junit: repeated.junit(suite: "pushbench capacity \(folder.lastPathComponent)"), markdown: repeated.markdown,
                        dashboard: dashboard)
    }

    /// What every search ends with once its answer is printed: the folder's path, the JUnit file and the
    /// GitHub step summary.
    private func conclude(folder: URL, junit: JUnitReport, markdown: String, dashboard: RunDashboard?) -> Int32 {
        if !base.json && !base.quiet { printOut(folder.path) }
        if let path = options.junitFile, let problem = junit.write(to: path) {
            printError("pushbench capacity: \(problem)")
            return 1
        }
        if let problem = StepSummary.append(markdown + "\n") {
            printError("pushbench capacity: WARNING: \(problem)")
        }
        if dashboard != nil { RunExecution(options: base, dashboard: dashboard).lingerDashboard(command: "capacity") }
        return 0
    }

    /// One whole search, its steps written under `folder` and its report beside them (by agent 0 alone
    /// when agents meet). `search` numbers it among repeated searches (0: the only one).
    private func searchOnce(_ inputs: (PayloadTemplate, DeviceTokens, Int), folder: URL, meeting: inout AgentMeeting?,
                            startedAt: Date, dashboard: RunDashboard?, search searchNumber: Int = 0) throws(RunExecution.Failure) -> CapacityReport {
        let (template, tokens, limit) = inputs
        var search = CapacitySearch(min: options.min, max: options.max, resolution: options.resolution, objectives: options.objectives)
        var runs: [StepRun] = []
        var interrupted = false
        let began = Date()
        while let rate = search.nextRate {
            let number = runs.count + 1
            var o = base
            o.rate = .perSecond(rate)
            o.durationSeconds = options.stepSeconds
            o.quiet = true
            o.json = false
            o.label = "step"
            if let meeting { o.startAtUnixNs = meeting.nextStart }
            var execution = RunExecution(options: o)
            execution.dashboard = dashboard
            let searchPrefix = searchNumber > 0 ? "search \(searchNumber) " : ""
            dashboard?.stage = searchPrefix + "step \(number): \(CapacitySearch.grouped(rate)) rps"
            var watching: DashboardSink?
            var (result, ownRecord, _) = try execution.measure(encoder: o.encoderVariants[0], label: o.label,
                                                          template: template, tokens: tokens, limit: limit,
                                                          timeline: { startedAt in
                                                              guard let dashboard else { return nil }
                                                              dashboard.measuredStart(startedAt)
                                                              watching = DashboardSink(inner: nil, dashboard: dashboard)
                                                              return watching
                                                          })
            if let watching { ownRecord.intervals = watching.kept }
            let name = String(format: "step-%02d-%drps", number, rate)
            let record: RunRecord
            var senderLimit: String?   // with agents, from their merge; alone, from this step's summary
            if var m = meeting {
                // Every agent decides the next step from the same merge of every agent's step, so all of them
                // take the same next rate without a coordinator.
                (record, senderLimit) = try m.meet(step: name, ownRecord)
                meeting = m
            } else {
                record = ownRecord
                do { try ResultsWriter.writeFolder(record, runID: name, to: folder.appendingPathComponent(name)) } catch {
                    throw RunExecution.Failure(status: 1, message: "cannot write \(name): \(error)")
                }
            }
            let summary = ResultsWriter.summaryJSON(record, runID: name)
            if meeting == nil { senderLimit = Self.senderLimit(summary) }
            var step = Self.step(record, senderLimit: senderLimit, objectives: search.objectives)
            step.machineLimit = Self.machineLimit(summary)
            search.record(step)
            let verdict = search.steps.last!.verdict
            runs.append(StepRun(number: number, folder: meeting == nil ? name : name + "/merged", record: record, step: step, verdict: verdict))
            let earlier = runs.dropLast().last { $0.step.rate == rate }
            say(Self.stepLine(runs.last!, rerun: earlier != nil, afterSteal: earlier?.verdict.name == "machine"))
            dashboard?.mark(searchPrefix + "step \(number) \(CapacitySearch.grouped(rate)) rps: " + (verdict == .held ? "held" : verdict.name))
            if result.interrupted { interrupted = true; break }
        }
        let elapsed = Date().timeIntervalSince(began)
        let answer = search.answer
        let sentence = answer.map { CapacitySearch.sentence($0, objectives: search.objectives, min: options.min, max: options.max) }
            ?? "capacity: interrupted after \(runs.count) step\(runs.count == 1 ? "" : "s"); no answer"
        let report = CapacityReport(command: command, objectives: search.objectives, runs: runs, answer: answer, sentence: sentence,
                                    startedAt: startedAt, seconds: elapsed, interrupted: interrupted)
        // Agents reach the same report; the first writes it.
        if meeting.map({ $0.index == 0 }) ?? true {
            do { try report.write(to: folder) } catch {
                throw RunExecution.Failure(status: 1, message: "cannot write the capacity report: \(error)")
            }
        }
        return report
    }

    /// A new folder `root/id` (with `-2`, `-3`… when it exists).
    static func newFolder(root: URL, id: String) throws(RunExecution.Failure) -> URL {
        var candidate = root.appendingPathComponent(id)
        var n = 2
        while FileManager.default.fileExists(atPath: candidate.path) {
            candidate = root.appendingPathComponent("\(id)-\(n)")
            n += 1
        }
        do { try FileManager.default.createDirectory(at: candidate, withIntermediateDirectories: true) } catch {
            throw RunExecution.Failure(status: 1, message: "\(candidate.path): cannot create the folder: \(error.localizedDescription)")
        }
        return candidate
    }

    /// What the search needs of a step's record (its own, or the merge of every agent's).
    static func step(_ r: RunRecord, senderLimit: String?, objectives: [CapacityObjective]) -> CapacityStep {
        let h = r.latency
        var at: [Double: Int64] = [:]
        for o in objectives {
            if case .latency(let p) = o.metric { at[p] = p >= 100 ? h.max : h.valueAtPercentile(p) }
        }
        let c = r.counts
        let errors = c.failed + c.transportErrors + c.unfinished
        let rate = r.config.rps ?? 0
        var notKept: String?
        var bySender = false
        if let outcome = r.rate, let shortfall = outcome.shortfall {
            notKept = rateShortfall(shortfall, sentRPS: outcome.sentRPS, achievedRPS: r.achievedRPS)
            bySender = shortfall == .sender
        }
        return CapacityStep(rate: rate, achievedRPS: r.achievedRPS, p50: h.valueAtPercentile(50), p99: h.valueAtPercentile(99),
                            p999: h.valueAtPercentile(99.9), latencyAt: at,
                            errorRate: c.sent > 0 ? Double(errors) / Double(c.sent) : 1, senderLimit: senderLimit,
                            rateNotKept: notKept, rateNotKeptBySender: bySender)
    }

    /// A step's rate shortfall (summary.json `throughput.rate_shortfall`) in words, with the figures.
    static func rateShortfall(_ shortfall: RateOutcome.Shortfall, sentRPS: Double, achievedRPS: Double) -> String {
        let sent = CapacitySearch.grouped(Int(sentRPS.rounded())), answered = CapacitySearch.grouped(Int(achievedRPS.rounded()))
        switch shortfall {
        case .sender: return "it sent \(sent) rps with streams free"
        case .streams: return "every stream was busy, so it sent \(sent) rps and \(answered) were answered (the target's answers were too slow for --connections x --streams)"
        case .target: return "the target answered \(answered) rps"
        }
    }

    /// Whether the sender of the run `summary` (one agent's summary.json) fell behind its own schedule.
    static func senderLimit(_ summary: JSONValue) -> String? {
        func number(_ path: String) -> Double { summary.value(atPath: path)?.number ?? 0 }
        let rate = Int(number("throughput.target_rps").rounded())
        let threads = Int(number("config.threads"))
        return CapacityStep.senderLimit(rate: rate, threads: threads, cpuSeconds: number("cpu.user_s") + number("cpu.sys_s"),
                                        elapsedSeconds: runSeconds(summary),
                                        maxBacklog: Int(number("backlog.max")), blocked: Int(number("backlog.blocked")))
    }

    /// Whether the host took enough CPU time during the run `summary` (summary.json `machine.steal_ms`)
    /// to have shaped its latency.
    static func machineLimit(_ summary: JSONValue) -> String? {
        guard let steal = summary.value(atPath: "machine.steal_ms")?.number else { return nil }
        return CapacityStep.machineLimit(stealSeconds: steal / 1000, elapsedSeconds: runSeconds(summary))
    }

    /// A run's wall time as its summary.json gives it: the warm-up and the measured time.
    static func runSeconds(_ summary: JSONValue) -> Double {
        (summary.value(atPath: "config.warmup_s")?.number ?? 0) + (summary.value(atPath: "throughput.measured_s")?.number ?? 0)
    }

    /// One step as printed; `rerun` marks the search's confirming rerun of a rate it already measured,
    /// `afterSteal` a rerun because the host stole CPU time from the last run of that rate.
    static func stepLine(_ s: StepRun, rerun: Bool = false, afterSteal: Bool = false) -> String {
        let st = s.step
        let verdict = (s.verdict == .held ? "held" : "\(s.verdict.name): \(s.verdict.why)")
            + (afterSteal ? " (rerun: the host stole CPU time from the last one)" : rerun ? " (rerun to confirm)" : "")
        return String(format: "  step %2d  %@ rps  achieved %@  p50 %@  p99 %@  p99.9 %@  errors %@  %@", s.number,
                      CapacitySearch.grouped(st.rate), CapacitySearch.grouped(Int(st.achievedRPS.rounded())),
                      CapacitySearch.ms(st.p50), CapacitySearch.ms(st.p99), CapacitySearch.ms(st.p999),
                      CapacitySearch.percent(st.errorRate), verdict)
    }

    static func seconds(_ s: Double) -> String { s == s.rounded() ? "\(Int(s)) s" : String(format: "%.1f s", s) }
}

/// Where the agents of one capacity search (`--segment I/N`, one `--start-at`, one `--out`) meet after each
/// step: each writes its step folder and a note of when it finished, waits for every other agent's, and
/// merges them all. The merge and the next start (2 s after the last agent finished) come from the same
/// files on every agent, so every agent makes the same decision and starts the next step at the same instant.
struct AgentMeeting {
    let folder: URL
    let index: Int
    let count: Int
    /// The next step's t0 (Unix ns).
    var nextStart: Int64
    /// How long to wait for the other agents' step before giving up.
    let waitNs: UInt64

    func agentFolder(_ step: String, _ i: Int) -> URL { folder.appendingPathComponent(step).appendingPathComponent("agent-\(i)") }
    func note(_ step: String, _ i: Int) -> URL { folder.appendingPathComponent(step).appendingPathComponent("agent-\(i).done") }

    /// Writes this agent's step, waits for the others', and returns the merged step and the first agent's
    /// sender limit (any agent falling behind makes the step the sender's).
    mutating func meet(step: String, _ own: RunRecord) throws(RunExecution.Failure) -> (RunRecord, String?) {
        let fm = FileManager.default
        do {
            try ResultsWriter.writeFolder(own, runID: "\(step)-agent-\(index)", to: agentFolder(step, index))
            // The note last, written whole then renamed: its presence means the folder is complete.
            let mark = note(step, index), temp = mark.appendingPathExtension("tmp")
            try Data(String(WallClock.unixNanoseconds()).utf8).write(to: temp)
            guard rename(temp.path, mark.path) == 0 else { throw ResultsError("\(mark.path): \(String(cString: strerror(errno)))") }
        } catch {
            throw RunExecution.Failure(status: 1, message: "cannot write \(step) of agent \(index): \(error)")
        }
        let deadline = DispatchTime.now().uptimeNanoseconds + waitNs
        var finished: [Int64] = []
        for i in 0..<count {
            while true {
                if let data = fm.contents(atPath: note(step, i).path), let ns = Int64(String(decoding: data, as: UTF8.self)) {
                    finished.append(ns)
                    break
                }
                if DispatchTime.now().uptimeNanoseconds > deadline {
                    throw RunExecution.Failure(status: 1, message: "agent \(i)/\(count) wrote no \(step) in \(waitNs / 1_000_000_000) s (\(note(step, i).path))")
                }
                usleep(50_000)
            }
        }
        let paths = (0..<count).map { agentFolder(step, $0).path }
        do {
            let runs = try paths.map { try LoadedRun.load($0, requireIntervals: true) }
            let segments = try SegmentCheck(runs, names: paths.map { String($0.dropFirst(folder.path.count + 1)) })
            if let problems = segments?.problems, !problems.isEmpty {
                throw ResultsError("the agents' \(step) do not make one run: " + problems.joined(separator: "; "))
            }
            let merged = try RunMerger.merge(runs, label: "step", segments: segments)
            if index == 0 {
                try ResultsWriter.writeFolder(merged, runID: step, to: folder.appendingPathComponent(step).appendingPathComponent("merged"))
            }
            let sender = zip(0..., runs).lazy.compactMap { i, r in CapacityExecution.senderLimit(r.summary).map { "agent \(i): \($0)" } }.first
            nextStart = ((finished.max() ?? WallClock.unixNanoseconds()) / 1_000_000 + 2_000) * 1_000_000
            return (merged, sender)
        } catch let failure as RunExecution.Failure {
            throw failure
        } catch {
            throw RunExecution.Failure(status: 1, message: "\(step): \(error)")
        }
    }
}

/// capacity.json, capacity.md and capacity.svg of a search.
struct CapacityReport {
    let command: CapacityCommand
    let objectives: [CapacityObjective]
    let runs: [CapacityExecution.StepRun]
    let answer: CapacitySearch.Answer?
    let sentence: String
    let startedAt: Date
    let seconds: Double
    let interrupted: Bool

    /// The latency the chart plots: the first latency objective's percentile, or p99.
    var plotted: (percentile: Double, objective: CapacityObjective?) {
        for o in objectives { if case .latency(let p) = o.metric { return (p, o) } }
        return (99, nil)
    }

    var chartPoints: [CapacityChart.Point] {
        runs.map { r in
            let p = plotted.percentile
            let v = r.step.latencyAt[p] ?? (p >= 100 ? r.record.latency.max : r.record.latency.valueAtPercentile(p))
            return CapacityChart.Point(rate: Double(r.step.rate), latencyMicros: v, verdict: r.verdict.name)
        }
    }

    var json: JSONValue {
        let o = command.options, b = command.stepOptions
        let knee = CapacityChart.knee(chartPoints)
        let answerJSON: JSONValue = answer.map { a in
            .object([
                ("rps", a.rate.map { .int(Int64($0)) } ?? .null),
                ("limited_by", .string(a.limit == .held ? "max" : a.limit.name)),
                ("limit_rps", a.limitRate.map { .int(Int64($0)) } ?? .null),
                ("why", .string(a.limit.why)),
                ("line", .string(sentence)),
            ])
        } ?? .null
        return .object([
            ("tool", .string("pushbench")), ("kind", .string("capacity")), ("version", .string(PushbenchVersion.current)),
            ("started_at", .string(ISO8601DateFormatter().string(from: startedAt))),
            ("interrupted", .bool(interrupted)),
            ("objectives", .array(objectives.map { .string($0.description) })),
            ("min_rps", .int(Int64(o.min))), ("max_rps", .int(Int64(o.max))), ("resolution", .double(o.resolution)),
            ("step_duration_s", .double(o.stepSeconds)), ("warmup_s", .double(b.warmupSeconds)),
            ("target", .string(b.target ?? "embedded")), ("protocol", .string(b.pushProtocol.rawValue)),
            ("connections", .int(Int64(b.connections))), ("streams", .int(Int64(b.streams))), ("threads", .int(Int64(b.threads))),
            ("agents", .int(Int64(b.segment?.count ?? 1))),
            ("answer", answerJSON),
            ("knee_rps", knee.map { .int(Int64($0.rate)) } ?? .null),
            ("search_s", .double((seconds * 10).rounded() / 10)),
            ("steps", .array(runs.map { r in
                let s = r.step, c = r.record.counts
                return .object([
                    ("step", .int(Int64(r.number))), ("rps", .int(Int64(s.rate))),
                    ("achieved_rps", .double((s.achievedRPS * 10).rounded() / 10)),
                    ("p50_us", .int(s.p50)), ("p99_us", .int(s.p99)), ("p999_us", .int(s.p999)),
                    ("max_us", .int(r.record.latency.max)),
                    ("sent", .int(c.sent)), ("errors", .int(c.failed + c.transportErrors + c.unfinished)),
                    ("error_rate", .double((s.errorRate * 1e6).rounded() / 1e6)),
                    ("verdict", .string(r.verdict.name)), ("why", .string(r.verdict.why)),
                    ("sender_limit", s.senderLimit.map { .string($0) } ?? .null),
                    ("folder", .string(r.folder)),
                ])
            })),
        ])
    }

    var markdown: String {
        let o = command.options, b = command.stepOptions
        var out = "# Capacity search\n\n**\(sentence)**\n\n"
        out += "Objectives: \(objectives.map { "`\($0.description)`" }.joined(separator: ", ")). "
        out += "Rates \(CapacitySearch.grouped(o.min))...\(CapacitySearch.grouped(o.max)) rps, resolution \(CapacitySearch.percent(o.resolution)), "
        out += "each step \(CapacityExecution.seconds(b.warmupSeconds)) of warm-up then \(CapacityExecution.seconds(o.stepSeconds)) measured; "
        out += "target \(b.target ?? "embedded gateway"), \(b.pushProtocol.rawValue), \(b.connections) connections × \(b.streams) streams, "
        out += "\(b.threads) driver thread\(b.threads == 1 ? "" : "s"). \(runs.count) steps in \(Int(seconds.rounded())) s"
        out += interrupted ? " (interrupted).\n\n" : ".\n\n"
        out += "| step | rate | achieved | p50 | p99 | p99.9 | errors | waited for a CPU | verdict | folder |\n"
        out += "|---|---|---|---|---|---|---|---|---|---|\n"
        for r in runs {
            let s = r.step
            let verdict = r.verdict == .held ? "held" : "**\(r.verdict.name)**: \(r.verdict.why)"
            out += "| \(r.number) | \(CapacitySearch.grouped(s.rate)) | \(CapacitySearch.grouped(Int(s.achievedRPS.rounded()))) "
            out += "| \(CapacitySearch.ms(s.p50)) | \(CapacitySearch.ms(s.p99)) | \(CapacitySearch.ms(s.p999)) "
            out += "| \(CapacitySearch.percent(s.errorRate)) | \(Self.cpuWait(r.record.details.machine)) | \(verdict) | \(r.folder) |\n"
        }
        out += "\n*Waited for a CPU*: how long the driver threads (d) and the embedded gateway's threads (g) were ready "
        out += "to run while another thread held the CPU, warm-up included; "
        out += b.realtime ? "they ran real-time (`--realtime`).\n" : "without `--realtime`, any busier process's thread can hold them off.\n"
        if let knee = CapacityChart.knee(chartPoints) {
            out += "\nThe knee of the \(plottedName) curve is at \(CapacitySearch.grouped(Int(knee.rate))) rps (capacity.svg).\n"
        }
        return out
    }

    /// A step's CPU waits for capacity.md: `d 12 ms, g 40 ms`, or `-` where unknown.
    static func cpuWait(_ machine: MachineNoise?) -> String {
        guard let d = machine?.driverCPUWaitSeconds else { return "-" }
        let ms = { (s: Double) in "\(Int((s * 1000).rounded())) ms" }
        return "d \(ms(d))" + (machine?.gatewayCPUWaitSeconds.map { ", g \(ms($0))" } ?? "")
    }

    var plottedName: String {
        let p = plotted.percentile
        return p >= 100 ? "max" : p == p.rounded() ? "p\(Int(p))" : "p\(p)"
    }

    func write(to folder: URL) throws {
        try Data((json.render() + "\n").utf8).write(to: folder.appendingPathComponent("capacity.json"))
        try Data(markdown.utf8).write(to: folder.appendingPathComponent("capacity.md"))
        let points = chartPoints
        let subtitle = "\(objectives.map(\.description).joined(separator: ", ")) · target \(command.stepOptions.target ?? "embedded") · "
            + "\(runs.count) steps of \(CapacityExecution.seconds(command.options.stepSeconds))"
        let svg = CapacityChart.svg(title: "pushbench capacity: " + (answer?.rate.map { "\(CapacitySearch.grouped($0)) rps" } ?? "not found"),
                                    subtitle: subtitle, points: points, latencyName: plottedName,
                                    objective: plotted.objective.map { ($0.limit, $0.description) }, answer: answer?.rate.map(Double.init), knee: CapacityChart.knee(points))
        try Data(svg.utf8).write(to: folder.appendingPathComponent("capacity.svg"))
    }
}

extension CapacityReport {
    /// The step an objective is shown at: the answer's (the highest rate confirmed to hold), or without
    /// one the lowest rate tried.
    var judgedStep: CapacityExecution.StepRun? {
        if let rate = answer?.rate, let held = runs.last(where: { $0.step.rate == rate && $0.verdict == .held }) { return held }
        return runs.min { $0.step.rate < $1.step.rate }
    }

    /// JUnit XML: a test case per objective, passed when the search found a rate that held them all.
    func junit(suite: String) -> JUnitReport {
        let found = answer?.rate != nil
        let step = judgedStep
        let cases = objectives.map { o -> JUnitReport.Case in
            let shown: RunObjective
            var value: Double?
            switch o.metric {
            case .latency(let p):
                shown = RunObjective(metric: .latency(percentile: p), limit: o.limit, description: o.description)
                value = step.map { s in Double(s.step.latencyAt[p] ?? (p >= 100 ? s.record.latency.max : s.record.latency.valueAtPercentile(p))) }
            case .errorRate:
                shown = RunObjective(metric: .errorRate, limit: o.limit, description: o.description)
                value = step?.step.errorRate
            }
            let at = step.map { "at \(CapacitySearch.grouped($0.step.rate)) rps" } ?? "no step ran"
            let text = "\(at): measured \(value.map(shown.format) ?? "nothing"), limit \(shown.limitText)"
            return JUnitReport.Case(name: o.description, className: "pushbench.capacity",
                                    failure: found ? nil : "no rate held: \(sentence); \(text)", output: text)
        }
        return JUnitReport(suite: suite, seconds: seconds, cases: cases)
    }
}
