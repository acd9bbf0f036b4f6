// `pushbench-benchmarks pacer`: how evenly the load generator's pacer spreads sends at a high rate.
// The real pacing path (DriverCore + the timerfd PreciseTimer on an EventLoop) drives a port that only
// timestamps each send; the same schedule driven by libuv's 1 ms timer is measured beside it, since
// that is what a pacer on uv_timer alone gets (50 sends every millisecond, in a burst, at 50k rps).

import BenchmarkKit
import CAllocCounter
import LoadGenerator
import PushTransport

#if canImport(Glibc)
import Glibc
#endif

/// Timestamps each send; never runs out of streams.
private final class TimestampPort: RequestPort {
    let times: UnsafeMutablePointer<UInt64>
    let capacity: Int
    var count = 0
    init(capacity: Int) {
        self.capacity = capacity
        times = .allocate(capacity: capacity)
    }
    deinit { times.deallocate() }
    func startRequest(slot: Int32, sequence: Int64, at now: UInt64) -> StartResult {
        guard count < capacity else { return .noStream }
        times[count] = MonotonicClock.nanoseconds()
        count += 1
        return .started
    }
}

private struct PacerFigures {
    var name: String
    var sends: Int
    var gapP50 = 0.0, gapP99 = 0.0, gapP999 = 0.0, gapMax = 0.0, zeroGaps = 0.0
    var lateP50 = 0.0, lateP99 = 0.0, lateMax = 0.0
    var allocsPerSend = 0.0
    var cpuSeconds = 0.0
}

private func percentile(_ sorted: [UInt64], _ p: Double) -> Double {
    guard !sorted.isEmpty else { return 0 }
    let i = min(sorted.count - 1, Int((p / 100 * Double(sorted.count)).rounded(.up)) - 1)
    return Double(sorted[max(0, i)]) / 1000
}

private func threadCPU() -> Double {
    var ts = timespec()
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts)
    return Double(ts.tv_sec) + Double(ts.tv_nsec) / 1e9
}

/// Runs the schedule for `seconds` at `rate`, pacing with the timerfd (`precise`) or a 1 ms uv_timer.
private func measurePacer(rate: Int, seconds: Double, precise: Bool, quantumNs: UInt64 = 0) throws -> PacerFigures {
    let loop = try EventLoop()
    let total = Int(Double(rate) * seconds)
    let port = TimestampPort(capacity: total)
    let core = DriverCore(plan: DriverPlan(rate: rate, durationNs: UInt64(seconds * 1e9), capacity: total),
                          clock: MonotonicClock.shared, recorder: Recorder())
    core.attach(port)
    var done = false
    var precision: PreciseTimer?
    var coarse: LoopTimer?
    let interval = max(UInt64(1_000_000_000 / rate), quantumNs)
    if precise {
        precision = try PreciseTimer(loop: loop) { _ in
            if core.pump() == nil && !core.generating { done = true }
        }
    } else {
        coarse = LoopTimer(loop: loop) {
            if core.pump() == nil && !core.generating { done = true }
        }
    }
    let t0 = MonotonicClock.nanoseconds() + 5_000_000
    core.begin(at: t0)
    precision?.start(firstDeadline: t0, intervalNanoseconds: interval)
    coarse?.start(afterMilliseconds: 1, repeatMilliseconds: 1)
    let cpu0 = threadCPU()
    pb_alloc_reset()
    loop.run(until: { done }, timeoutNanoseconds: UInt64(seconds * 1e9) + 5_000_000_000)
    let allocs = pb_alloc_count()
    let cpu = threadCPU() - cpu0
    precision?.stop()
    coarse?.stop()
    precision = nil
    coarse = nil
    loop.close()

    var gaps: [UInt64] = []
    var late: [UInt64] = []
    gaps.reserveCapacity(port.count)
    late.reserveCapacity(port.count)
    let pacer = core.pacer!
    for k in 0..<port.count {
        if k > 0 { gaps.append(port.times[k] &- port.times[k - 1]) }
        let intended = pacer.intendedTime(local: Int64(k))
        late.append(port.times[k] > intended ? port.times[k] - intended : 0)
    }
    let zero = gaps.filter { $0 < 2_000 }.count
    gaps.sort()
    late.sort()
    let name = !precise ? "uv_timer 1 ms" : quantumNs > 0 ? "timerfd, \(quantumNs / 1000) µs quantum" : "timerfd (exact)"
    var f = PacerFigures(name: name, sends: port.count)
    f.gapP50 = percentile(gaps, 50); f.gapP99 = percentile(gaps, 99); f.gapP999 = percentile(gaps, 99.9)
    f.gapMax = Double(gaps.last ?? 0) / 1000
    f.zeroGaps = gaps.isEmpty ? 0 : Double(zero) / Double(gaps.count) * 100
    f.lateP50 = percentile(late, 50); f.lateP99 = percentile(late, 99); f.lateMax = Double(late.last ?? 0) / 1000
    f.allocsPerSend = port.count > 0 ? Double(allocs) / Double(port.count) : 0
    f.cpuSeconds = cpu
    return f
}

private func fmt(_ v: Double, _ digits: Int = 1) -> String {
    var s = 1.0
    for _ in 0..<digits { s *= 10 }
    let n = Int((v * s).rounded())
    let whole = n / Int(s), frac = n % Int(s)
    var f = String(frac)
    while f.count < digits { f = "0" + f }
    return digits > 0 ? "\(whole).\(f)" : "\(whole)"
}

private func pad(_ s: String, _ n: Int) -> String { s.count >= n ? s : String(repeating: " ", count: n - s.count) + s }

/// `pushbench-benchmarks pacer [--rate N] [--seconds S]`.
func runPacerBenchmarks(_ arguments: [String]) -> Int32 {
    var rate = 50_000
    var seconds = 2.0
    var i = 0
    while i < arguments.count {
        let a = arguments[i]
        guard i + 1 < arguments.count else { print("pushbench-benchmarks pacer: \(a) needs a value"); return 2 }
        switch a {
        case "--rate":
            guard let r = Int(arguments[i + 1]), r > 0, r <= 1_000_000 else {
                print("pushbench-benchmarks pacer: --rate: '\(arguments[i + 1])' is not a rate (1...1000000)")
                return 2
            }
            rate = r
        case "--seconds":
            guard let s = Double(arguments[i + 1]), s > 0, s <= 60 else {
                print("pushbench-benchmarks pacer: --seconds: '\(arguments[i + 1])' is not a duration (0...60)")
                return 2
            }
            seconds = s
        default:
            print("USAGE: pushbench-benchmarks pacer [--rate N] [--seconds S]")
            return 2
        }
        i += 2
    }
    do {
        let ideal = 1e6 / Double(rate)
        print("pacer: \(rate) sends/s for \(fmt(seconds)) s, one thread; ideal gap \(fmt(ideal, 2)) µs")
        print("\(pad("pacer", 22)) \(pad("sends", 8)) \(pad("gap p50", 9)) \(pad("p99", 8)) \(pad("p99.9", 8)) \(pad("max", 8))"
              + " \(pad("gaps<2µs", 9)) \(pad("late p50", 9)) \(pad("p99", 8)) \(pad("max", 8)) \(pad("allocs/send", 12)) \(pad("cpu s", 6))")
        var rows: [PacerFigures] = []
        // The default step pushbench uses at this rate (100 µs at 50k), or 50 µs where the default is exact.
        let step = LoadConfiguration.automaticQuantumNs(perThreadRate: Double(rate))
        for (precise, quantum) in [(true, UInt64(0)), (true, step > 0 ? step : 50_000), (false, UInt64(0))] {
            let f = try measurePacer(rate: rate, seconds: seconds, precise: precise, quantumNs: quantum)
            rows.append(f)
            print("\(pad(f.name, 22)) \(pad(String(f.sends), 8)) \(pad(fmt(f.gapP50), 9)) \(pad(fmt(f.gapP99), 8))"
                  + " \(pad(fmt(f.gapP999), 8)) \(pad(fmt(f.gapMax), 8)) \(pad(fmt(f.zeroGaps) + "%", 9))"
                  + " \(pad(fmt(f.lateP50), 9)) \(pad(fmt(f.lateP99), 8)) \(pad(fmt(f.lateMax), 8))"
                  + " \(pad(fmt(f.allocsPerSend, 3), 12)) \(pad(fmt(f.cpuSeconds, 2), 6))")
        }
        print("(gaps and lateness in µs; lateness = actual send - intended send t0 + k/rate)")
        if rows[0].lateP99 > 0 {
            print("p99 lateness ratio uv_timer/timerfd: \(fmt(rows[2].lateP99 / rows[0].lateP99, 1))x;"
                  + " cpu ratio timerfd exact/quantum: \(fmt(rows[0].cpuSeconds / max(rows[1].cpuSeconds, 1e-9), 1))x")
        }
        return rows[0].allocsPerSend > 0.01 ? 1 : 0
    } catch {
        print("pushbench-benchmarks pacer: \(error)")
        return 2
    }
}
