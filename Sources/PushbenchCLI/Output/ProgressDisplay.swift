#if canImport(Glibc)
import Glibc
#endif
import LoadGenerator

/// The once-a-second progress display of a run: on a terminal one line redrawn in place, otherwise one
/// plain line per second (for CI logs), nothing with `--quiet`.
struct ProgressDisplay {
    /// Where the line goes: stderr when stdout carries `--json`, else stdout.
    let fd: Int32
    /// Whether `fd` is a terminal (redraw in place with `\r` and erase-to-end-of-line).
    let terminal: Bool
    let enabled: Bool
    /// The warm-up's length: lines for seconds inside it say so, since what they count stays out of
    /// the run's figures.
    let warmupSeconds: Double
    /// The open-loop rate, to say when the sender falls behind it (nil: closed loop).
    let targetRPS: Int?
    private var lastSent = 0
    private var lastErrors = 0
    private var lastElapsed = 0.0
    private var drewLine = false

    init(quiet: Bool, json: Bool, warmupSeconds: Double = 0, targetRPS: Int? = nil) {
        fd = json ? 2 : 1
        terminal = isatty(fd) != 0
        enabled = !quiet
        self.warmupSeconds = warmupSeconds
        self.targetRPS = targetRPS
    }

    /// The display of one round of an encoder A/B run: a variant's first round carries its warm-up, so
    /// its seconds are marked as such.
    init(round: ComparisonRound, quiet: Bool, json: Bool, targetRPS: Int?) {
        self.init(quiet: quiet, json: json, warmupSeconds: Double(round.warmupNs) / 1e9, targetRPS: targetRPS)
    }

    /// Shows `snapshot` taken `elapsed` seconds after the run started.
    mutating func show(_ snapshot: LiveSnapshot, elapsed: Double) {
        guard enabled else { return }
        let line = nextLine(snapshot, elapsed: elapsed)
        if terminal {
            write("\r" + line + "\u{1B}[K")
            drewLine = true
        } else {
            write(line + "\n")
        }
    }

    /// The line for `snapshot` taken `elapsed` seconds after the run started; rates and errors per second
    /// are over the time since the previous line.
    mutating func nextLine(_ snapshot: LiveSnapshot, elapsed: Double) -> String {
        let window = elapsed - lastElapsed
        let rps = window > 0 ? Double(snapshot.sent - lastSent) / window : 0
        let errorsPerSecond = window > 0 ? Double(snapshot.errors - lastErrors) / window : 0
        lastSent = snapshot.sent
        lastErrors = snapshot.errors
        lastElapsed = elapsed
        return ProgressDisplay.format(snapshot, elapsed: elapsed, rps: rps, errorsPerSecond: errorsPerSecond,
                                      warmup: ProgressDisplay.inWarmup(elapsed: elapsed, window: window, warmupSeconds: warmupSeconds),
                                      behind: ProgressDisplay.behind(snapshot, targetRPS: targetRPS))
    }

    /// Ends the redrawn line so what follows starts on a fresh line.
    mutating func finish() {
        if enabled && terminal && drewLine { write("\n") }
        drewLine = false
    }

    /// One progress line, e.g.
    /// `3.0s  sent 150000  50000 rps  in flight 12  backlog 0  p50 0.21 ms  p99 0.80 ms  errors 3 (+1/s)`;
    /// `1.0s warm-up  sent …` for a second of the warm-up; `p50 -` when no response came back in the
    /// last whole second (no figure, rather than a false 0); `BEHIND the rate` when the sender is late;
    /// what TLS settled (e.g. `TLSv1.3 h2`) at the end over TLS.
    static func format(_ s: LiveSnapshot, elapsed: Double, rps: Double, errorsPerSecond: Double = 0, warmup: Bool = false,
                       behind: Bool = false) -> String {
        let answered = s.lastSecondCompleted > 0
        return "\(fixed(elapsed, 1))s\(warmup ? " warm-up" : "")  sent \(s.sent)  \(Int(rps.rounded())) rps"
            + "  in flight \(s.inFlight)  backlog \(s.backlog)"
            + "  p50 \(answered ? milliseconds(s.p50Micros) : "-")  p99 \(answered ? milliseconds(s.p99Micros) : "-")"
            + "  errors \(s.errors) (+\(Int(errorsPerSecond.rounded()))/s)"
            + (behind ? "  BEHIND the rate" : "")
            + (s.tls.map { "  \($0)" } ?? "")
    }

    /// Whether the sender is behind an open-loop rate: more than 10 ms of the schedule is waiting to go out.
    static func behind(_ s: LiveSnapshot, targetRPS: Int?) -> Bool {
        guard let rate = targetRPS else { return false }
        return s.backlog > max(1, rate / 100)
    }

    /// Whether the line for the `window` seconds ending at `elapsed` is about the warm-up: it began inside it.
    static func inWarmup(elapsed: Double, window: Double, warmupSeconds: Double) -> Bool {
        elapsed - max(window, 0) < warmupSeconds - 1e-3
    }

    static func milliseconds(_ micros: Int) -> String { fixed(Double(micros) / 1000, 2) + " ms" }

    /// `value` with `digits` decimals, without Foundation's String(format:).
    static func fixed(_ value: Double, _ digits: Int) -> String {
        var scale = 1.0
        for _ in 0..<digits { scale *= 10 }
        let n = Int((abs(value) * scale).rounded())
        let whole = n / Int(scale), frac = n % Int(scale)
        var f = String(frac)
        while f.count < digits { f = "0" + f }
        return (value < 0 && n != 0 ? "-" : "") + String(whole) + (digits > 0 ? "." + f : "")
    }

    private func write(_ text: String) {
        var t = text
        t.withUTF8 { b in
            var off = 0
            while off < b.count {
                let n = Glibc.write(fd, b.baseAddress! + off, b.count - off)
                if n <= 0 { break }
                off += n
            }
        }
    }
}
