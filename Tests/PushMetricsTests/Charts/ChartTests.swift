import Foundation
import Testing
@testable import PushMetrics

/// The charts as a reader sees them: axes labelled with their gridlines' values, nothing drawn over
/// anything else, every chart rendered by a real SVG renderer.
@Suite struct ChartAxisTests {
    /// Draws `axis` alone and reads it back from the SVG text.
    func drawn(_ axis: ChartAxis, orient: String = "y") -> ChartCheck.Axis? {
        var svg = SVG(width: 600, height: 400)
        if orient == "y" { axis.drawY(&svg, x: 80, y: 20, w: 500, h: 300) } else { axis.drawX(&svg, x: 80, y: 20, w: 500, h: 300) }
        return ChartCheck.read(svg.finish())?.axes.first
    }

    @Test func everyLabelSaysItsGridlinesValueOverManyRanges() throws {
        var rng = SeededRandom(seed: 2026)
        var checked = 0
        for k in 0..<1000 {
            let magnitude = pow(10, Double.random(in: -4...7, using: &rng))
            let hi = magnitude * Double.random(in: 0.1...10, using: &rng)
            let lo = k % 3 == 0 ? 0 : hi * Double.random(in: 0...0.9, using: &rng)
            let logLo = Swift.max(lo, hi * Double.random(in: 1e-5...0.5, using: &rng), 1e-6)  // the log axis starts at 1e-6 at the lowest
            let axes: [(ChartAxis, Double)] = [
                (.linear(lo: lo, hi: hi, count: 2 + k % 9), lo),
                (.linear(hi: hi, count: 5, integer: true, headroom: 0.08), 0),
                (.log(lo: logLo, hi: hi), logLo),
                (.percentile(samples: k % 50 == 0 ? 0 : Int64(pow(10, Double.random(in: 0...8, using: &rng)))), 0),
            ]
            for (i, (axis, from)) in axes.enumerated() {
                let read = try #require(drawn(axis, orient: i % 2 == 0 ? "y" : "x"))
                #expect(read.ticks.count == axis.ticks.count)
                let problems = ChartCheck.problems(read)
                #expect(problems.isEmpty, "\(axis.scale) lo \(lo) hi \(hi): \(problems)")
                if axis.scale != .percentile {
                    #expect(axis.ticks.first! <= from * (1 + 1e-9) && axis.ticks.last! >= hi * (1 - 1e-9),
                            "\(axis.scale) \(axis.ticks) does not cover \(from) … \(hi)")
                }
                #expect(axis.ticks.count <= 17, "\(axis.ticks.count) ticks for \(lo) … \(hi)")
                checked += 1
            }
        }
        #expect(checked == 4_000)
    }

    @Test func aClosedLoopLatencyAxisIsNotLabelledTwoFiveEight() throws {
        // The axis that read "0, 2, 5, 8, 10, 12, 15" on gridlines 2.5 apart.
        let axis = ChartAxis.latency(smallest: 0.05, body: 7, largest: 15)
        #expect(axis.labels == ["0", "5", "10", "15"])
        let wide = ChartAxis.linear(hi: 15, count: 8)
        #expect(wide.labels == ["0", "2", "4", "6", "8", "10", "12", "14", "16"])
        #expect(ChartAxis.linear(hi: 0.0123, count: 5).labels == ["0.000", "0.005", "0.010", "0.015"])
    }

    @Test func anEmptyThroughputAxisCountsInWholeRequests() {
        #expect(ChartAxis.linear(hi: 0, count: 5, integer: true, headroom: 0.08).labels == ["0", "1"])
        #expect(ChartAxis.linear(hi: 3, count: 5, integer: true).labels == ["0", "1", "2", "3"])
        #expect(ChartAxis.linear(hi: 5_000, count: 5, integer: true, headroom: 0.08).labels.last == "6,000")
    }

    @Test func logTicksAreOneTwoFiveAndLabelledExactly() {
        #expect(ChartAxis.log(lo: 0.3, hi: 40).labels == ["0.2", "0.5", "1", "2", "5", "10", "20", "50"])
        #expect(ChartAxis.log(lo: 0.001, hi: 0.001).labels == ["0.001", "0.002"])
        #expect(ChartAxis.log(lo: 1, hi: 2_000).labels.last == "2,000")
        // Beyond 16 ticks only the decades are labelled.
        #expect(ChartAxis.log(lo: 0.001, hi: 1e6).labels == ["0.001", "0.010", "0.100", "1", "10", "100", "1,000", "10,000", "100,000", "1,000,000"]
                || ChartAxis.log(lo: 0.001, hi: 1e6).ticks.count == 10)
    }

    @Test func thePercentileAxisStopsWhereTheSampleCountDoes() {
        // 600 samples resolve percentiles up to 1 − 1/600 (99.83%): no 99.9% on the axis.
        let a = ChartAxis.percentile(samples: 600)
        #expect(a.labels == ["0%", "90%", "99%"])
        #expect(abs(a.hi - log10(600)) < 1e-12)
        #expect(ChartAxis.percentile(samples: 2_000_000).labels.last == "99.9999%")
        #expect(ChartAxis.percentile(samples: 1_000).labels.last == "99.9%")
        #expect(ChartAxis.percentile(samples: 5).labels == ["0%", "50%"])
    }
}

@Suite struct RunChartTests {
    func svg(_ r: RunRecord, _ id: String = "run") -> String {
        ReportChart.runSVG(record: r, intervals: TimelineInterval.merged(r.intervals), title: ReportTitle(runID: id, record: r))
    }

    func axes(_ svg: String) throws -> [ChartCheck.Axis] { try #require(ChartCheck.read(svg)).axes }

    /// The polylines' points in drawing order, with their stroke colour and width.
    func polylines(_ svg: String) -> [(stroke: String, width: String, points: [(Double, Double)])] {
        svg.components(separatedBy: "<polyline").dropFirst().map { chunk in
            func attribute(_ name: String) -> String {
                String(chunk.components(separatedBy: " \(name)=\"").dropFirst().first?.prefix { $0 != "\"" } ?? "")
            }
            let pts = attribute("points")
            return (attribute("stroke"), attribute("stroke-width"), pts.split(separator: " ").map { p in
                let xy = p.split(separator: ",").compactMap { Double($0) }
                return (xy[0], xy[1])
            })
        }
    }

    @Test func errorsHaveTheirOwnAxisSoFortyFourASecondShowBesideFiveThousand() throws {
        let s = svg(ChartFixtures.steady("errors", rate: 5_000, seconds: 10, errors: 44))
        // y axes top to bottom: latency by percentile, rates, errors, latency per second.
        let ys = try axes(s).filter { $0.orient == "y" }
        #expect(ys.count == 4)
        let errorAxis = ys[2], rateAxis = ys[1]
        #expect(errorAxis.hi == 50, "44 errors/s on a 0–50 axis: \(errorAxis.ticks.map(\.label))")
        #expect(rateAxis.hi > 5_000, "the top tick sits above the rate, so the lines stay clear of the frame")
        // A bar of 44 on the 0–50 axis is most of the 80 px panel.
        let bars = s.components(separatedBy: "fill=\"\(ReportChart.colors.failed)\"").count - 1
        #expect(bars >= 10)
        #expect(s.contains("non-2xx responses / s") && s.contains("transport errors / s"))
    }

    @Test func sentIsDrawnOverCompletedAndBelowTheTopOfTheFrame() throws {
        let s = svg(ChartFixtures.steady("kept", rate: 5_000, seconds: 5))
        let lines = polylines(s)
        let completed = try #require(lines.firstIndex { $0.stroke == ReportChart.colors.latency && $0.width == "3.5" })
        let sent = try #require(lines.firstIndex { $0.stroke == ReportChart.colors.sent })
        #expect(sent > completed, "sent/s is drawn last, dashed, over completed/s")
        let rateAxis = try #require(try axes(s).first { $0.orient == "y" && $0.hi >= 5_000 })
        let frameTop = rateAxis.to
        #expect(lines[sent].points.allSatisfy { $0.1 > frameTop + 5 }, "the rate line is not on the frame")
    }

    @Test func theDrainSecondGetsNoLatencyPointAndThePartialNoteNeverSaysZero() throws {
        let drained = svg(ChartFixtures.steady("drain", rate: 500, seconds: 10, drain: 80))
        let p99 = try #require(polylines(drained).first { $0.stroke == ReportChart.colors.p99 })
        #expect(p99.points.count == 10, "one p99 point per measured second, none for the drain")
        let rates = try #require(polylines(drained).first { $0.stroke == ReportChart.colors.sent })
        #expect(rates.points.map(\.0) == p99.points.map(\.0), "the rate and latency panels draw the same seconds")
        #expect(!drained.contains("0.000 s"))
        #expect(drained.contains("the drain after the measured time (80 responses)"))
        #expect(!drained.contains("partial second"))

        let partial = svg(ChartFixtures.steady("partial", rate: 500, seconds: 10, partial: 0.42))
        #expect(partial.contains("the last partial second (0.420 s measured in second 10)"))
        #expect(!svg(ChartFixtures.steady("exact", rate: 500, seconds: 10)).contains("Not drawn"))
    }

    @Test func thePercentileAxisOfARunEndsAtItsSampleCount() throws {
        let s = svg(ChartFixtures.steady("small", rate: 200, seconds: 3))  // 600 samples
        let x = try #require(try axes(s).first { $0.scale == "percentile" })
        #expect(x.ticks.map(\.label) == ["0%", "90%", "99%"])
        #expect(s.contains("up to 1 − 1/n for n = 600 samples"))
    }

    @Test func anEmptyRunsLegendStaysClearOfItsTitle() throws {
        for r in [ChartFixtures.empty(), ChartFixtures.empty(seconds: 2)] {
            let s = svg(r)
            let chart = try #require(ChartCheck.read(s))
            #expect(ChartCheck.overlaps(chart.texts).isEmpty, "\(ChartCheck.overlaps(chart.texts))")
            #expect(s.contains("no latency samples"))
            #expect(ChartCheck.allProblems(s).isEmpty, "\(ChartCheck.allProblems(s))")
        }
    }

    @Test func reportHTMLHasTheTitleOnceAndTheMeanWithItsUnit() throws {
        let r = Fixtures.record()
        let title = ReportTitle(runID: "20261129-120000-fixture", record: r)
        let html = ReportChart.runHTML(record: r, intervals: TimelineInterval.merged(r.intervals), title: title,
                                       summary: ResultsWriter.summaryJSON(r, runID: "20261129-120000-fixture"))
        let body = try #require(html.components(separatedBy: "<body>").last)
        #expect(body.components(separatedBy: title.title).count - 1 == 1, "the title appears once in the page")
        #expect(body.components(separatedBy: title.subtitle).count - 1 == 1)
        let mean = String(format: "%.3f ms", r.latency.mean / 1000)
        #expect(html.contains("<td>\(mean)</td>"), "the mean has its unit")
    }

    @Test func mergedRunsThatDoNotOverlapAreDrawnWithTheGapEmpty() throws {
        let m = try ChartFixtures.merged(offset: 22)
        defer { try? FileManager.default.removeItem(at: m.root) }
        #expect(MeasuredTime(record: m.record).spans == [.init(start: 0, end: 10), .init(start: 22, end: 32)])
        let s = svg(m.record, "merged")
        let completed = polylines(s).filter { $0.stroke == ReportChart.colors.latency && $0.width == "3.5" }
        #expect(completed.count == 2, "one line per agent, none across the gap")
        #expect(completed.map(\.points.count) == [10, 10], "no agent's seconds are dropped")
        let p99 = polylines(s).filter { $0.stroke == ReportChart.colors.p99 }
        #expect(p99.count == 2 && p99.allSatisfy { $0.points.count == 10 })
        #expect(s.contains("Nothing measured from 10.0 s to 22.0 s"))
        #expect(ChartCheck.allProblems(s).isEmpty, "\(ChartCheck.allProblems(s))")

        let gaps = RunMerger.gaps(m.runs)
        #expect(gaps.count == 1 && gaps[0].seconds == 12)
        #expect(RunMerger.gapWarning(gaps)?.contains("12.0 s with no run measuring") == true)
        let overlapping = try ChartFixtures.merged(offset: 5)
        defer { try? FileManager.default.removeItem(at: overlapping.root) }
        #expect(RunMerger.gaps(overlapping.runs).isEmpty && RunMerger.gapWarning([]) == nil)
        #expect(MeasuredTime(record: overlapping.record).spans == [.init(start: 0, end: 15)])
    }

    @Test func aMergedFolderRedrawsWithItsGap() throws {
        let m = try ChartFixtures.merged(offset: 22)
        defer { try? FileManager.default.removeItem(at: m.root) }
        let out = m.root.appendingPathComponent("merged")
        let result = try RunMerger.mergeFoldersReportingGaps(m.runs.map { $0.folder!.path }, out: out)
        #expect(result.gaps.count == 1)
        let reloaded = try LoadedRun.load(out.path, requireIntervals: true)
        #expect(MeasuredTime(record: reloaded.record) == MeasuredTime(record: m.record))
        let redrawn = try Fixtures.text(try RunReport.redraw(out.path)[0])
        #expect(redrawn.contains("Nothing measured from 10.0 s to 22.0 s"))
    }
}

@Suite struct ChartRenderingTests {
    /// Every chart of the catalogue renders with rsvg-convert, and reads right: each axis label says
    /// its gridline's value and no text overlaps another. PUSHBENCH_CHART_DIR keeps the PNGs there.
    @Test func everyChartRendersAndReadsRight() throws {
        let keep = ProcessInfo.processInfo.environment["PUSHBENCH_CHART_DIR"].map { URL(fileURLWithPath: $0) }
        let dir = try keep ?? Fixtures.tempDir("charts")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { if keep == nil { try? FileManager.default.removeItem(at: dir) } }
        let charts = try ChartFixtures.catalogue()
        #expect(charts.count >= 20)
        for (name, svg) in charts {
            #expect(ChartCheck.render(svg, to: dir.appendingPathComponent("\(name).png")) == nil,
                    "\(name): \(ChartCheck.render(svg, to: dir.appendingPathComponent("\(name).png")) ?? "")")
            let problems = ChartCheck.allProblems(svg)
            #expect(problems.isEmpty, "\(name): \(problems)")
        }
    }

    @Test func theGoldenChartsRenderAndReadRight() throws {
        let dir = try Fixtures.tempDir("golden-charts")
        defer { try? FileManager.default.removeItem(at: dir) }
        for name in ["handmade-report.svg", "history.svg", "long-tail-report.svg", "golden-run/report.svg"] {
            let svg = try Fixtures.text(Fixtures.fixtureURL(name))
            let png = dir.appendingPathComponent(name.replacingOccurrences(of: "/", with: "-") + ".png")
            #expect(ChartCheck.render(svg, to: png) == nil, "\(name)")
            #expect(ChartCheck.allProblems(svg).isEmpty, "\(name): \(ChartCheck.allProblems(svg))")
        }
    }
}
