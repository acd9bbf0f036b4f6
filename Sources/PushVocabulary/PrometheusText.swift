/// Prometheus's text exposition format (version 0.0.4), written one metric family at a time: a
/// `# HELP` and a `# TYPE` line, then one sample line per label set. Label values are escaped as the
/// format asks (`\\`, `\"`, `\n`); numbers are written exactly (integers as integers).
///
/// ```swift
/// var text = PrometheusText()
/// text.family("pushbench_gateway_requests_total", .counter, "Push requests received, by route.",
///             [(["route": "apns"], 12), (["route": "fcm"], 3)])
/// text.family("pushbench_gateway_connections_open", .gauge, "Connections open now.", 2)
/// print(text.text)
/// ```
public struct PrometheusText: Sendable {
    /// A metric family's type.
    public enum Kind: String, Sendable {
        /// Only ever goes up (names end in `_total`).
        case counter
        /// Goes up and down.
        case gauge
    }

    /// The exposition so far.
    public private(set) var text = ""

    /// An empty exposition.
    public init() {}

    /// A family with one sample per label set, labels written in sorted order. An empty `samples`
    /// writes nothing (a family without samples says nothing a scraper can use).
    public mutating func family(_ name: String, _ kind: Kind, _ help: String, _ samples: [([String: String], Double)]) {
        guard !samples.isEmpty else { return }
        text += "# HELP \(name) \(Self.escapeHelp(help))\n# TYPE \(name) \(kind.rawValue)\n"
        for (labels, value) in samples {
            text += name
            if !labels.isEmpty {
                text += "{" + labels.keys.sorted().map { "\($0)=\"\(Self.escapeLabel(labels[$0]!))\"" }.joined(separator: ",") + "}"
            }
            text += " " + Self.number(value) + "\n"
        }
    }

    /// A family with a single unlabelled sample.
    public mutating func family(_ name: String, _ kind: Kind, _ help: String, _ value: Double) {
        family(name, kind, help, [([:], value)])
    }

    /// `v` as the format writes it: integers without a fraction, `NaN`, `+Inf`, `-Inf`.
    public static func number(_ v: Double) -> String {
        if v.isNaN { return "NaN" }
        if v.isInfinite { return v > 0 ? "+Inf" : "-Inf" }
        if v == v.rounded(), abs(v) < 1e15 { return String(Int64(v)) }
        return "\(v)"
    }

    /// A label value with `\`, `"` and newlines escaped.
    static func escapeLabel(_ s: String) -> String {
        var o = ""
        for c in s {
            switch c {
            case "\\": o += "\\\\"
            case "\"": o += "\\\""
            case "\n": o += "\\n"
            default: o.append(c)
            }
        }
        return o
    }

    /// HELP text with `\` and newlines escaped.
    static func escapeHelp(_ s: String) -> String {
        s.replacingOccurrences("\\", "\\\\").replacingOccurrences("\n", "\\n")
    }
}

extension String {
    fileprivate func replacingOccurrences(_ a: Character, _ b: String) -> String {
        var o = ""
        for c in self { if c == a { o += b } else { o.append(c) } }
        return o
    }
}
