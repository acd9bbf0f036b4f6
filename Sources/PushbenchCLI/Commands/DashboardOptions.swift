import PushTransport

/// `--dashboard`, `--dashboard-viewers` and `--dashboard-linger`, declared once for every command that
/// serves a dashboard (run, capacity, gateway).
enum DashboardOptions {
    /// The three options, storing into `address`, `viewers` and `linger` of `O`; `what` names what the
    /// page shows ("run", "gateway").
    static func options<O>(_ address: WritableKeyPath<O, MetricsAddress?>, _ viewers: WritableKeyPath<O, Int>,
                           _ linger: WritableKeyPath<O, Double>, what: String) -> [Option<O>] {
        [
            .value("--dashboard", "HOST:PORT", address,
                   help: "serve a live page of the \(what) in a browser (charts updated each second from a server-sent event stream, GET /events; the seconds at GET /seconds) while it runs; :PORT for 127.0.0.1") {
                text, name throws(UsageError) in
                let (host, port) = try ValueParser.quantity(text, option: name, HostResolver.listenAddress)
                return MetricsAddress(host: host, port: port)
            },
            .value("--dashboard-viewers", "N", viewers, default: "8",
                   help: "browsers (event streams) the dashboard serves at once; one more is refused with 503") {
                text, name throws(UsageError) in try ValueParser.integer(text, option: name, range: 1...1_000)
            },
            .value("--dashboard-linger", "T", linger, default: "0",
                   help: "keep serving the dashboard's final page this long after the \(what) ends (e.g. 5m)") {
                text, name throws(UsageError) in
                let d = try ValueParser.duration(text, option: name)
                guard d <= 7 * 86_400 else { throw UsageError("\(name): '\(text)' is over a week") }
                return d
            },
        ]
    }
}
