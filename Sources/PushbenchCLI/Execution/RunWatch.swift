import LoadGenerator
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// Set by the stop signals' handler during a run: the run ends early and still writes every file.
/// A global because a C signal handler cannot capture context; an Atomic, so it is safe to touch from it.
let interruptRequested = Atomic<Bool>(false)

/// The signals that stop a run early and keep its results: Ctrl-C, what Kubernetes and CI send to stop
/// a job, and a closed terminal.
let runStopSignals: [Int32] = [SIGINT, SIGTERM, SIGHUP]

/// The handlers ``catchInterrupts()`` replaced, to put back with ``restoreInterrupts(_:)``.
typealias PreviousHandlers = [(Int32, __sighandler_t?)]

/// Clears ``interruptRequested`` and lets SIGINT, SIGTERM and SIGHUP set it for the run about to start: it
/// stops sending, drains briefly and writes every file marked interrupted. A second signal ends the
/// process at once (status 128 + the signal), for a user who will not wait for the drain.
func catchInterrupts() -> PreviousHandlers {
    interruptRequested.store(false, ordering: .relaxed)
    var previous: PreviousHandlers = []
    for sig in runStopSignals {
        previous.append((sig, signal(sig) { sig in
            if interruptRequested.exchange(true, ordering: .relaxed) { _exit(128 + sig) }
        }))
    }
    // A parent may have started us with them blocked (posix_spawn inherits the mask); they must work.
    var unblock = sigset_t()
    sigemptyset(&unblock)
    for sig in runStopSignals { sigaddset(&unblock, sig) }
    pthread_sigmask(SIG_UNBLOCK, &unblock, nil)
    return previous
}

/// Puts back the handlers ``catchInterrupts()`` replaced.
func restoreInterrupts(_ previous: PreviousHandlers) {
    for (sig, handler) in previous { signal(sig, handler) }
}

/// What a measured phase shows while it runs: the progress line (a new one per A/B round), the
/// `--metrics-listen` endpoint and the `--dashboard`, all fed each second's snapshot; and whether a stop signal asked the
/// run to end early.
final class RunWatch {
    /// The progress line now.
    var display: ProgressDisplay
    /// The `--metrics-listen` endpoint, when asked for.
    let metrics: RunMetricsEndpoint?
    /// The `--dashboard` endpoint, when asked for.
    let dashboard: RunDashboard?

    init(display: ProgressDisplay, metrics: RunMetricsEndpoint?, dashboard: RunDashboard? = nil) {
        self.display = display
        self.metrics = metrics
        self.dashboard = dashboard
    }

    /// One second's snapshot, `elapsed` seconds into the run: on the line and at the endpoints.
    func show(_ snapshot: LiveSnapshot, elapsed: Double) {
        display.show(snapshot, elapsed: elapsed)
        metrics?.publish(snapshot, elapsed: elapsed)
        dashboard?.publish(live: snapshot, elapsed: elapsed)
    }

    /// Whether a stop signal came (the run ends early, and what was measured is kept).
    var stopRequested: Bool { interruptRequested.load(ordering: .relaxed) }
}

extension RunExecution {
    /// Runs `phase` watched: the `--metrics-listen` endpoint listening (exit 2 when it cannot), the stop
    /// signals caught, the progress line starting as `display` and finished however `phase` ends. A load
    /// run that could not start becomes the run's failure.
    func watched<R>(label: String, target: String, targetRPS: Int?, display: ProgressDisplay,
                    _ phase: (RunWatch) throws(LoadRunError) -> R) throws(Failure) -> R {
        let metrics = try startMetrics(label: label, target: target, targetRPS: targetRPS)
        defer { metrics?.stop() }
        let previous = catchInterrupts()
        defer { restoreInterrupts(previous) }
        let watch = RunWatch(display: display, metrics: metrics, dashboard: dashboard)
        defer { watch.display.finish() }
        do throws(LoadRunError) { return try phase(watch) } catch { throw Failure(error) }
    }
}
