import Foundation

extension ReportChart {
    /// One row of history.csv.
    struct HistoryRow: Sendable, Equatable {
        /// Run id (`YYYYMMDD-HHMMSS-<label>`).
        var runID: String
        /// The run's label.
        var label: String
        /// Encoder variant.
        var encoder: String
        /// Target rate, or `max`.
        var targetRPS: String
        /// Completed requests per measured second.
        var achievedRPS: Double
        /// Corrected latency percentiles in µs.
        var p50: Double, p99: Double, p999: Double
        /// Non-2xx responses plus transport errors.
        var errors: Int64
        /// User plus system CPU seconds.
        var cpuSeconds: Double
        /// "apns" or "fcm"; nil in rows written before history.csv had the column.
        var protocolName: String? = nil
        /// The target ("embedded" or its URL); nil in rows written before history.csv had the column.
        var target: String? = nil

        /// Creates a row.
        init(runID: String, label: String, encoder: String, targetRPS: String, achievedRPS: Double,
                    p50: Double, p99: Double, p999: Double, errors: Int64, cpuSeconds: Double,
                    protocolName: String? = nil, target: String? = nil) {
            self.runID = runID
            self.label = label
            self.encoder = encoder
            self.targetRPS = targetRPS
            self.achievedRPS = achievedRPS
            self.p50 = p50
            self.p99 = p99
            self.p999 = p999
            self.errors = errors
            self.cpuSeconds = cpuSeconds
            self.protocolName = protocolName
            self.target = target
        }

        /// The row of a finished run.
        init(runID: String, record r: RunRecord) {
            self.init(runID: runID, label: r.label, encoder: r.config.encoder, targetRPS: r.config.rps.map(String.init) ?? "max",
                      achievedRPS: r.achievedRPS, p50: Double(r.latency.valueAtPercentile(50)),
                      p99: Double(r.latency.valueAtPercentile(99)), p999: Double(r.latency.valueAtPercentile(99.9)),
                      errors: r.counts.failed + r.counts.transportErrors, cpuSeconds: r.cpuUserSeconds + r.cpuSystemSeconds,
                      protocolName: r.config.protocolName, target: r.config.target)
        }

        /// The header of history.csv: the first ten columns as they always were, then the columns added since.
        static let csvHeader = "run_id,label,encoder,target_rps,achieved_rps,p50_us,p99_us,p999_us,errors,cpu_s,protocol,target"

        /// The row as a line of history.csv (commas in free text become `-`).
        var csvLine: String {
            func clean(_ s: String) -> String { s.replacingOccurrences(of: ",", with: "-").replacingOccurrences(of: "\n", with: " ") }
            return [runID, clean(label), encoder, targetRPS, String(format: "%.1f", achievedRPS),
                    String(Int64(p50)), String(Int64(p99)), String(Int64(p999)), String(errors),
                    String(format: "%.3f", cpuSeconds), clean(protocolName ?? ""), clean(target ?? "")].joined(separator: ",") + "\n"
        }

        /// What makes two runs comparable: encoder, rate, protocol and target.
        var series: String {
            let rate = targetRPS == "max" ? "closed loop" : (Double(targetRPS).map { "\(grouped($0)) rps" } ?? targetRPS)
            var parts = [encoder, rate]
            if let protocolName, let target, !protocolName.isEmpty || !target.isEmpty {
                parts += [protocolName, target]
            } else {
                parts.append("protocol and target not recorded")
            }
            return parts.joined(separator: " · ")
        }

        /// "YYYY-MM-DD HH:MM" (UTC) from the run id, or the run id when it has no date.
        var date: String {
            guard let c = stamp else { return runID }
            return "\(String(c[0..<4]))-\(String(c[4..<6]))-\(String(c[6..<8])) \(String(c[9..<11])):\(String(c[11..<13]))"
        }

        /// The start time the run id begins with (`YYYYMMDD-HHMMSS`), as seconds since 1970 (UTC).
        var startSeconds: Double? {
            guard let c = stamp, let y = Int(String(c[0..<4])), let mo = Int(String(c[4..<6])), let d = Int(String(c[6..<8])),
                  let h = Int(String(c[9..<11])), let mi = Int(String(c[11..<13])), let sec = Int(String(c[13..<15])) else { return nil }
            var cal = Calendar(identifier: .gregorian)
            cal.timeZone = TimeZone(identifier: "UTC")!
            return cal.date(from: DateComponents(year: y, month: mo, day: d, hour: h, minute: mi, second: sec))?.timeIntervalSince1970
        }

        private var stamp: [Character]? {
            let c = Array(runID)
            guard c.count >= 15, c[8] == "-", c[..<8].allSatisfy(\.isNumber), c[9..<15].allSatisfy(\.isNumber) else { return nil }
            return c
        }

        /// Rows of the test-only slowed encoder are not measurements.
        var isTestSlowed: Bool { label.hasSuffix("-test-slowed") }
    }

    /// Parses history.csv (columns found by their header names, so files from before a column was
    /// added still read); errors name the line.
    static func parseHistory(_ text: String, file: String = "history.csv") throws -> [HistoryRow] {
        var rows: [HistoryRow] = []
        let lines = text.split(whereSeparator: \.isNewline).map(String.init)
        guard let header = lines.first, header.hasPrefix("run_id,") else {
            throw ResultsError("\(file): missing header \"\(HistoryRow.csvHeader)\"")
        }
        let names = header.split(separator: ",", omittingEmptySubsequences: false).map(String.init)
        let column = Dictionary(names.enumerated().map { ($1, $0) }, uniquingKeysWith: { a, _ in a })
        let required = ["run_id", "label", "encoder", "target_rps", "achieved_rps", "p50_us", "p99_us", "p999_us", "errors", "cpu_s"]
        if let missing = required.first(where: { column[$0] == nil }) {
            throw ResultsError("\(file): header lacks \"\(missing)\" (expected \(HistoryRow.csvHeader))")
        }
        for (n, line) in lines.dropFirst().enumerated() where !line.isEmpty {
            let f = line.split(separator: ",", omittingEmptySubsequences: false).map(String.init)
            func field(_ name: String) -> String? { column[name].flatMap { $0 < f.count ? f[$0] : nil } }
            guard f.count >= required.count, let a = field("achieved_rps").flatMap(Double.init),
                  let p50 = field("p50_us").flatMap(Double.init), let p99 = field("p99_us").flatMap(Double.init),
                  let p999 = field("p999_us").flatMap(Double.init), let e = field("errors").flatMap({ Int64($0) }),
                  let cpu = field("cpu_s").flatMap(Double.init) else {
                throw ResultsError("\(file): line \(n + 2): expected at least 10 fields (\(HistoryRow.csvHeader))")
            }
            rows.append(HistoryRow(runID: field("run_id")!, label: field("label")!, encoder: field("encoder")!,
                                   targetRPS: field("target_rps")!, achievedRPS: a, p50: p50, p99: p99, p999: p999,
                                   errors: e, cpuSeconds: cpu, protocolName: field("protocol"), target: field("target")))
        }
        return rows
    }

    /// Runs that ran together (each within `window` seconds of the one before, no configuration twice)
    /// share a place on the history's x axis: the six cells of a nightly are one night.
    static func sessions(_ rows: [HistoryRow], window: Double = 600) -> [[Int]] {
        var out: [[Int]] = []
        var last: Double?
        for (i, r) in rows.enumerated() {
            let t = r.startSeconds
            if let cur = out.last, let t, let l = last, t - l <= window, !cur.contains(where: { rows[$0].series == r.series }) {
                out[out.count - 1].append(i)
            } else {
                out.append([i])
            }
            last = t ?? last
        }
        return out
    }

    /// What a session is called under the axis: the one label, or the labels' common stem in whole
    /// words ("nightly" for nightly-50k-zerocopy, nightly-max-copy …).
    static func sessionLabel(_ labels: [String]) -> String {
        guard let first = labels.first else { return "" }
        if labels.allSatisfy({ $0 == first }) { return first }
        var stem = first
        for l in labels.dropFirst() { while !l.hasPrefix(stem) { stem.removeLast() } }
        func endsAWord(_ l: String) -> Bool { l.count == stem.count || "-_.".contains(l[l.index(l.startIndex, offsetBy: stem.count)]) }
        while !stem.isEmpty && !labels.allSatisfy(endsAWord) { stem.removeLast() }
        while let c = stem.last, "-_.".contains(c) { stem.removeLast() }
        return stem.isEmpty ? first + " …" : stem
    }

    /// The trend of history.csv: achieved rps (top) and p50/p99/p99.9 on a log axis (bottom), one
    /// series per comparable configuration (encoder, rate, protocol, target). Runs that ran together
    /// share a place on the x axis, labelled by date and label. Rows of the test-only slowed encoder
    /// are left out.
    static func historySVG(_ allRows: [HistoryRow], title: String = "pushbench history") -> String {
        let rows = allRows.filter { !$0.isTestSlowed }
        let skipped = allRows.count - rows.count
        var order: [String] = []
        var members: [String: [Int]] = [:]
        for (i, r) in rows.enumerated() {
            if members[r.series] == nil { order.append(r.series) }
            members[r.series, default: []].append(i)
        }
        let palette = VariantComparison.palette
        func color(_ k: Int) -> String { palette[k % palette.count] }

        var svg = SVG(width: width)
        svg.text(24, 34, title, size: 20, weight: "bold")
        var sub = "\(rows.count) run\(rows.count == 1 ? "" : "s") in \(order.count) configuration\(order.count == 1 ? "" : "s")"
        if let first = rows.first, let last = rows.last { sub += ", \(first.date) to \(last.date) UTC" }
        if skipped > 0 { sub += "; \(skipped) test-slowed run\(skipped == 1 ? "" : "s") not drawn" }
        svg.text(24, 58, sub, size: 13, color: "#444")

        let x = 100.0, w = width - 140
        var y = 70.0
        let seriesItems = order.enumerated().map { k, s in
            LegendItem(color: color(k), text: "\(s) (\(members[s]!.count) run\(members[s]!.count == 1 ? "" : "s"))")
        }
        for row in ChartParts.legendRows(seriesItems, width: width - 48) {
            y += 20
            ChartParts.drawLegendRow(&svg, row, right: 24 + ChartParts.legendWidth(row) - 16, y: y)
        }

        let groups = sessions(rows)
        var slotOf = [Int](repeating: 0, count: rows.count)
        for (k, g) in groups.enumerated() { for i in g { slotOf[i] = k } }
        let n = Swift.max(groups.count, 1)
        func slotX(_ k: Int) -> Double { n == 1 ? x + w / 2 : x + 24 + (w - 48) * Double(k) / Double(n - 1) }
        func px(_ i: Int) -> Double { slotX(slotOf[i]) }
        func drawSeries(_ value: (HistoryRow) -> Double, _ py: (Double) -> Double, dash: String?, width lw: Double, dots: Bool) {
            for (k, s) in order.enumerated() {
                let pts = members[s]!.map { (px($0), py(value(rows[$0]))) }
                svg.polyline(pts, stroke: color(k), width: lw, dash: dash)
                if dots || pts.count == 1 { for p in pts { svg.circle(p.0, p.1, 3, fill: color(k)) } }
            }
        }
        // Session labels (date, then label) under the latency panel, thinned so they never overlap.
        let names = groups.map { g in (rows[g[0]].date, String(sessionLabel(g.map { rows[$0].label }).prefix(28))) }
        let labelW = names.map { Swift.max(SVG.textWidth($0.0, size: 11), SVG.textWidth($0.1, size: 11)) }.max() ?? 0
        let spacing = n > 1 ? (w - 48) / Double(n - 1) : w
        let labelStep = Swift.max(1, Int(ceil((labelW + 12) / spacing)))
        func runGrid(_ top: Double, _ h: Double) {
            for k in stride(from: 0, to: groups.count, by: labelStep) { svg.line(slotX(k), top, slotX(k), top + h, stroke: "#eee") }
        }

        // Throughput.
        y = ChartParts.panelHeader(&svg, x: x, top: y + 12, w: w, title: "Achieved throughput per run", legend: [])
        let h = 220.0
        let rAxis = ChartAxis.linear(hi: rows.map(\.achievedRPS).max() ?? 0, count: 5, integer: true, headroom: 0.08)
        ChartParts.frame(&svg, x: x, y: y, w: w, h: h)
        runGrid(y, h)
        rAxis.drawY(&svg, x: x, y: y, w: w, h: h)
        drawSeries(\.achievedRPS, { y + h - h * rAxis.fraction($0) }, dash: nil, width: 2, dots: true)
        ChartParts.yTitle(&svg, x: x - 80, y: y, h: h, "requests / s")
        if rows.isEmpty { svg.text(x + w / 2, y + h / 2, "history.csv has no runs yet", size: 14, anchor: "middle", color: "#888") }

        // Latency on a log axis: configurations far apart (a paced rate and a closed loop) both stay readable.
        let styles = [(\HistoryRow.p999, "4,3", 1.5, "p99.9 (dashed)"), (\HistoryRow.p99, nil, 2.2, "p99 (solid, dots)"),
                      (\HistoryRow.p50, "1,3", 1.5, "p50 (dotted)")]
        y = ChartParts.panelHeader(&svg, x: x, top: y + h + 8, w: w, title: "Corrected latency per run",
                                   legend: styles.map { LegendItem(color: "#555", text: $0.3, mark: .line(dash: $0.1)) })
        let all = rows.flatMap { [$0.p50, $0.p99, $0.p999] }.filter { $0 > 0 }.map { $0 / 1000 }
        let lAxis = ChartAxis.log(lo: all.min() ?? 0.1, hi: all.max() ?? 10)
        let lh = 300.0
        ChartParts.frame(&svg, x: x, y: y, w: w, h: lh)
        runGrid(y, lh)
        lAxis.drawY(&svg, x: x, y: y, w: w, h: lh)
        for (kp, dash, lw, _) in styles {
            drawSeries({ $0[keyPath: kp] / 1000 }, { y + lh - lh * lAxis.fraction($0) }, dash: dash, width: lw, dots: dash == nil)
        }
        ChartParts.yTitle(&svg, x: x - 62, y: y, h: lh, "latency (ms, log scale)")
        for k in stride(from: 0, to: groups.count, by: labelStep) {
            // The outermost labels stay inside the page.
            let cx = Swift.min(Swift.max(slotX(k), 24 + labelW / 2), width - 24 - labelW / 2)
            svg.text(cx, y + lh + 18, names[k].0, size: 11, anchor: "middle")
            svg.text(cx, y + lh + 33, names[k].1, size: 11, anchor: "middle", color: "#444")
        }
        svg.text(x + w / 2, y + lh + 58, "runs in the order they ran (UTC); runs started together share a place", size: 13, anchor: "middle")
        svg.height = y + lh + 72
        return svg.finish()
    }
}

/// history.csv: one row per run, appended as runs finish.
enum HistoryFile {
    /// Appends `row` to the history.csv at `url`, creating it with the header when missing. A file
    /// written before columns were added gets the current header first (its old rows keep their
    /// fields, which readers take as the leading columns).
    static func append(_ row: ReportChart.HistoryRow, to url: URL) throws {
        let fm = FileManager.default
        guard fm.fileExists(atPath: url.path) else {
            try ResultsWriter.save(ReportChart.HistoryRow.csvHeader + "\n" + row.csvLine, url)
            return
        }
        let text = try LoadedRun.readText(url)
        let header = text.prefix { $0 != "\n" && $0 != "\r" }
        if header != ReportChart.HistoryRow.csvHeader, ReportChart.HistoryRow.csvHeader.hasPrefix(header + ",") {
            var rest = String(text.dropFirst(header.count))
            if !rest.hasSuffix("\n") { rest += "\n" }
            try ResultsWriter.save(ReportChart.HistoryRow.csvHeader + rest + row.csvLine, url)
            return
        }
        try ResultsWriter.appendLine(row.csvLine, to: url)
    }
}
