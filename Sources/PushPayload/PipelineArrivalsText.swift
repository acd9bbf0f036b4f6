/// The text of `POST /pipeline/arrivals`, how a gateway started with `--correlate-prefix` hands the pushes
/// it matched to a pipeline run given `--egress-url`: a first line `# pushbench pipeline arrivals PREFIX`,
/// then one line per push, `index arrived_unix_ns route status token` (index -1: no id, -2: another
/// run's; route 0 APNs, 1 FCM; status 0: the connection was dropped; token the ``PushTokenHash`` of its
/// device token, 0 for none, and a line without it reads as 0).
public enum PipelineArrivalsText {
    static let header = "# pushbench pipeline arrivals "

    /// One arrival as it is read back: its time on the wall clock, in ns since the Unix epoch.
    public struct Line: Equatable, Sendable {
        /// The request's index, or ``PushArrival/noID`` or ``PushArrival/foreignID``.
        public var index: Int64
        /// Arrival, ns since the Unix epoch.
        public var unixNs: Int64
        /// 0 APNs, 1 FCM.
        public var route: UInt8
        /// The status answered (0: dropped).
        public var status: UInt16
        /// The token's fingerprint (0: none).
        public var token: UInt64

        /// A line; see the properties.
        public init(index: Int64, unixNs: Int64, route: UInt8, status: UInt16, token: UInt64 = 0) {
            self.index = index
            self.unixNs = unixNs
            self.route = route
            self.status = status
            self.token = token
        }
    }

    /// The text for `prefix` and `lines`.
    public static func render(prefix: String, _ lines: [Line]) -> String {
        var text = header + prefix + "\n"
        text.reserveCapacity(lines.count * 52)
        for l in lines { text += "\(l.index) \(l.unixNs) \(l.route) \(l.status) \(l.token)\n" }
        return text
    }

    /// The prefix and lines of `text`; nil when it is not such a text.
    public static func parse(_ text: String) -> (prefix: String, lines: [Line])? {
        var lines = text.split(separator: "\n")
        guard let first = lines.first, first.hasPrefix(header) else { return nil }
        let prefix = String(first.dropFirst(header.count))
        lines.removeFirst()
        var out: [Line] = []
        out.reserveCapacity(lines.count)
        for line in lines {
            let f = line.split(separator: " ")
            guard f.count == 4 || f.count == 5, let i = Int64(f[0]), let t = Int64(f[1]), let r = UInt8(f[2]), let s = UInt16(f[3]),
                  let token = f.count == 5 ? UInt64(f[4]) : 0 else { return nil }
            out.append(Line(index: i, unixNs: t, route: r, status: s, token: token))
        }
        return (prefix, out)
    }
}
