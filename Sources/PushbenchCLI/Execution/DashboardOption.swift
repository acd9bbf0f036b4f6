import Foundation
import PushTransport

extension RunExecution {
    /// The `--dashboard` endpoint, listening before any traffic (exit 2 when it cannot), or nil; the
    /// address is printed, with a warning when it reaches beyond loopback. `stepSeconds`: the measured
    /// time of each step of a capacity search, whose rate changes from step to step.
    func startDashboard(kind: String, label: String, command: String, stepSeconds: Double? = nil) throws(Failure) -> RunDashboard? {
        guard let address = options.dashboard else { return nil }
        var measured = options.schedule.map { Double($0.durationNs) / 1e9 } ?? (options.requests == nil ? options.durationSeconds : nil)
        var targetRPS: Int?
        if case .perSecond(let n) = options.rate, options.schedule == nil { targetRPS = n }
        if let stepSeconds { (measured, targetRPS) = (stepSeconds, nil) }
        let source = RunDashboard.Source(kind: kind, label: label, warmupSeconds: options.warmupSeconds, measuredSeconds: measured,
                                         targetRPS: targetRPS, stages: stepSeconds == nil ? options.schedule?.stages ?? [] : [])
        do throws(ScrapeEndpoint.Failure) {
            let dashboard = try RunDashboard(address: address, viewers: options.dashboardViewers, source: source)
            if let warning = ListenWarning.dashboardMessage(host: address.host, port: dashboard.port) {
                printError("pushbench \(command): \(warning)")
            }
            let host = address.host.contains(":") ? "[\(address.host)]" : address.host
            printError("pushbench \(command): dashboard at http://\(host):\(dashboard.port)/ (open it in a browser)")
            return dashboard
        } catch {
            throw Failure(status: 2, message: "--dashboard: \(error)")
        }
    }

    /// With `--dashboard-linger T`: the final page served T longer (a stop signal ends it sooner), unless
    /// a stop signal ended the run.
    func lingerDashboard(command: String) {
        guard let dashboard, options.dashboardLingerSeconds > 0, !interruptRequested.load(ordering: .relaxed) else { return }
        printError("pushbench \(command): the dashboard keeps serving the final page for "
                   + "\(Self.shortDuration(options.dashboardLingerSeconds)) (Ctrl-C ends it)")
        dashboard.linger(options.dashboardLingerSeconds)
    }

    static func shortDuration(_ s: Double) -> String {
        s >= 60 && s.truncatingRemainder(dividingBy: 60) == 0 ? "\(Int(s / 60)) min" : s == s.rounded() ? "\(Int(s)) s" : "\(s) s"
    }
}
