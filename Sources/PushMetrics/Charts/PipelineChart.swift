/// e2e_report.svg of a pipeline run: end-to-end latency (each request's intended send time to the
/// arrival of its push at the egress) beside the front door's latency, by percentile, on the
/// 1/(1 − p) log axis report.svg uses; the gap between the curves is what the service adds after it
/// answered.
public enum PipelineChart {
    /// The chart for `endToEnd` and `frontDoor` (µs histograms), titled `title`.
    public static func svg(endToEnd: HdrHistogram, frontDoor: HdrHistogram, title: String, subtitle: String) -> String {
        var svg = SVG(width: ReportChart.width)
        svg.text(24, 34, title, size: 20, weight: "bold")
        svg.text(24, 58, subtitle, size: 13, color: "#444")
        let x = 90.0, w = ReportChart.width - 130
        let y = ChartParts.percentilePanel(&svg, x: x, top: 72, w: w, h: 340, title: "End to end and front door, by percentile",
                                           curves: [(endToEnd, "#6a1b9a", "end to end (intended send to push arrival)"),
                                                    (frontDoor, "#1565c0", "front door (intended send to the service's answer)")])
        svg.height = y + 12
        return svg.finish()
    }
}
