import Foundation
import PushTransport

/// `pushbench dashboard`'s options.
struct DashboardCommandOptions: Equatable, Sendable {
    /// `--listen`: where the merged dashboard is served.
    var listen = ListenAddress(host: "127.0.0.1", port: 8088)
    /// `--dashboard-viewers`.
    var viewers = 8
    /// `--dashboard-linger`, seconds.
    var linger = 0.0
    /// `--wait`, seconds.
    var wait = 3.0
    /// `--give-up`, seconds.
    var giveUp = 10.0
    /// `--ndjson`.
    var ndjson = false
    /// `--quiet`.
    var quiet = false

    /// A host and port to listen on.
    struct ListenAddress: Equatable, Sendable {
        var host: String
        var port: Int
    }
}

/// `pushbench dashboard`: one live page for every agent of a distributed run, their seconds merged.
struct DashboardCommand: PushbenchCommand {
    static let name = "dashboard"
    static let abstract = "follow the agents of a distributed run live and serve them as one dashboard"
    static let usage = """
    USAGE: pushbench dashboard URL... [--listen [HOST:]PORT] [--wait T] [--give-up T]
                               [--dashboard-viewers N] [--dashboard-linger T] [--ndjson] [--quiet]

    Follows each agent's dashboard endpoint (URL is http://HOST:PORT of an agent started with
    --dashboard; the agents of one run share --start-at) and serves one dashboard for the whole run at
    --listen: the same page and endpoints as an agent's. Every half second each agent is asked for the
    seconds it closed since; their seconds are lined up by wall time and merged exactly, counts summed
    and histograms added bucket by bucket, so the p99 shown is the p99 of every request of that second,
    not an average of the agents'. A second waits --wait for an agent that has not sent it, then is shown
    without it, the agent named missing. An agent that does not answer is asked again each time and
    picks up where it left off. Ends when every agent said it is done, or when some did and every other
    has not answered for --give-up (those are named: it ends without them), then serves the final page
    for --dashboard-linger; or on SIGINT/SIGTERM.
    """
    static let footer: String? = "EXIT STATUS: 0 every agent finished (or was given up on), or stopped by a signal; 1 a failure (the message says which); 2 bad input."

    static var options: OptionTable<DashboardCommandOptions> {
        OptionTable([
            .value("--listen", "[HOST:]PORT", \.listen, default: "127.0.0.1:8088",
                   help: "where to serve the merged dashboard; a PORT alone is 127.0.0.1:PORT, 0.0.0.0:PORT reaches every interface") {
                text, name throws(UsageError) in
                let spec = !text.isEmpty && text.allSatisfy(\.isNumber) ? ":" + text : text
                let (host, port) = try ValueParser.quantity(spec, option: name, HostResolver.listenAddress)
                return DashboardCommandOptions.ListenAddress(host: host, port: port)
            },
            .value("--wait", "T", \.wait, default: "3s",
                   help: "how long a second waits past its end for an agent that has not sent it; then it is shown without it, the agent named missing") {
                text, name throws(UsageError) in
                let t = try ValueParser.duration(text, option: name)
                guard t > 0, t <= 600 else { throw UsageError("\(name): '\(text)' is out of range (above 0s, at most 10m)") }
                return t
            },
            .value("--give-up", "T", \.giveUp, default: "10s",
                   help: "once some agents are done, how long every other may go unanswered before the dashboard ends without it (named on stderr and in the final figures)") {
                text, name throws(UsageError) in
                let t = try ValueParser.duration(text, option: name)
                guard t > 0, t <= 86_400 else { throw UsageError("\(name): '\(text)' is out of range (above 0s, at most 24h)") }
                return t
            },
            .value("--dashboard-viewers", "N", \.viewers, default: "8", help: "browsers (event streams) the dashboard serves at once; one more is refused with 503") {
                text, name throws(UsageError) in try ValueParser.integer(text, option: name, range: 1...1_000)
            },
            .value("--dashboard-linger", "T", \.linger, default: "0s", help: "keep serving the dashboard's final page this long after every agent is done (e.g. 5m)") {
                text, name throws(UsageError) in
                let d = try ValueParser.duration(text, option: name)
                guard d <= 7 * 86_400 else { throw UsageError("\(name): '\(text)' is over a week") }
                return d
            },
            .flag("--ndjson", \.ndjson, help: "also print each merged second to stdout as one JSON line, as GET /seconds serves it"),
            .flag("--quiet", \.quiet, help: "no line per merged second on stderr (agents that stop answering are still reported)"),
        ])
    }

    let agents: [AgentAddress]
    let options: DashboardCommandOptions

    init(arguments a: ParsedArguments) throws(UsageError) {
        guard !a.positionals.isEmpty else { throw UsageError("missing URL (one or more agents' http://HOST:PORT)") }
        var o = DashboardCommandOptions()
        try Self.options.apply(a, to: &o)
        var seen: Set<String> = []
        var agents: [AgentAddress] = []
        for text in a.positionals {
            let agent = try AgentAddress(text)
            guard seen.insert(agent.name).inserted else { throw UsageError("'\(text)': the agent \(agent.name) is given twice") }
            agents.append(agent)
        }
        self.agents = agents
        options = o
    }

    func run() -> Int32 {
        DashboardExecution(agents: agents, options: options).run()
    }
}
