import Foundation
import Testing
@testable import PushMetrics

/// capacity.svg: the knee it marks, and a chart a reader can read.
@Suite struct CapacityChartTests {
    static func points(_ pairs: [(Double, Int64, String)]) -> [CapacityChart.Point] {
        pairs.map { CapacityChart.Point(rate: $0.0, latencyMicros: $0.1, verdict: $0.2) }
    }

    @Test func theKneeIsWhereTheCurveLeavesItsFlatPart() {
        let curve = Self.points([(1_000, 300, "held"), (2_000, 310, "held"), (4_000, 320, "held"), (8_000, 340, "held"),
                                 (16_000, 420, "held"), (24_000, 900, "held"), (32_000, 4_800, "objective"), (28_000, 2_100, "held")])
        #expect(CapacityChart.knee(curve)?.rate == 24_000)
        // Too few rates, or no bend: no knee.
        #expect(CapacityChart.knee(Self.points([(1_000, 300, "held"), (2_000, 900, "held")])) == nil)
        #expect(CapacityChart.knee(Self.points([(1_000, 300, "held"), (2_000, 300, "held"), (3_000, 300, "held")])) == nil)
        // A rate run twice counts once (its later sample).
        let rerun = Self.points([(1_000, 300, "held"), (2_000, 5_000, "objective"), (3_000, 9_000, "objective"), (2_000, 320, "held")])
        #expect(CapacityChart.knee(rerun)?.rate == 2_000)
    }

    @Test func theChartIsReadable() throws {
        let curve = Self.points([(1_000, 300, "held"), (2_000, 310, "held"), (4_000, 320, "held"), (8_000, 340, "held"),
                                 (16_000, 420, "held"), (32_000, 48_000, "objective"), (24_000, 3_900, "held"),
                                 (28_000, 9_000, "sender"), (26_000, 6_000, "errors"), (25_000, 4_200, "held")])
        let svg = CapacityChart.svg(title: "pushbench capacity: 25,000 rps", subtitle: "p99<5ms · embedded", points: curve,
                                    latencyName: "p99", objective: (5_000, "p99<5ms"), answer: 25_000, knee: CapacityChart.knee(curve))
        #expect(ChartCheck.allProblems(svg).isEmpty, "\(ChartCheck.allProblems(svg))")
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("capacity-chart-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        #expect(ChartCheck.render(svg, to: dir.appendingPathComponent("capacity.png")) == nil)
        for text in ["objective p99&lt;5ms", "capacity 25,000 rps", "knee 25,000 rps", "sender fell behind", "too many errors"] {
            #expect(svg.contains(text), "\(text)")
        }
    }
}
