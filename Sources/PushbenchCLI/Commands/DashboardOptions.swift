import PushTransport

/// `--dashboard`, `--dashboard-viewers` and `--dashboard-linger`, declared once for every command that
/// serves a dashboard (run, capacity, gateway).
enum DashboardOptions {
    /// The three options, storing into `address`, `viewers` and `linger` of `O`; `what` names what the
    /// page shows ("run", "gateway").
    static func options<O>(_ address: WritableKeyPath<O, MetricsAddress?>, _ viewers: WritableKeyPath<O, Int>,
                           _ linger: WritableKeyPath<O, Double>, what: String) -> [Option<O>] {
        [
            .value("--dashboard", "[HOST:]PORT", address,
                   help: "serve a live page of the \(what) in a browser (charts updated each second from a server-sent event stream, GET /events; "
                       + "the \(what == "gateway" ? "gateway's seconds (its gateway events)" : "seconds") at GET /seconds) while it runs; "
                       + "127.0.0.1 when no host is given") {
                text, name throws(UsageError) in try Self.address(text, option: name)
            },
            .value("--dashboard-viewers", "N", viewers, default: "8",
                   help: "browsers (event streams) the dashboard serves at once; one more is refused with 503") {
                text, name throws(UsageError) in try ValueParser.integer(text, option: name, range: 1...1_000)
            },
            .value("--dashboard-linger", "T", linger, default: "0s",
                   help: "keep serving the dashboard's final page this long after the \(what) ends (e.g. 5m)") {
                text, name throws(UsageError) in
                let d = try ValueParser.duration(text, option: name)
                guard d <= 7 * 86_400 else { throw UsageError("\(name): '\(text)' is over a week") }
                return d
            },
        ]
    }

    /// `HOST:PORT`, `:PORT` or a bare `PORT`, the last two on 127.0.0.1.
    static func address(_ text: String, option name: String) throws(UsageError) -> MetricsAddress {
        let bare = !text.isEmpty && text.utf8.allSatisfy { $0 >= 0x30 && $0 <= 0x39 }
        let (host, port) = try ValueParser.quantity(bare ? ":" + text : text, option: name, HostResolver.listenAddress)
        return MetricsAddress(host: host, port: port)
    }
}
