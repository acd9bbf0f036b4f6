#if canImport(Glibc)
import Glibc
#endif
import PushTransport

/// Reads what the host took from a run that the run cannot see in its own figures: CPU time the
/// hypervisor gave to other guests (steal, from /proc/stat) and the load average. On a shared or virtual
/// machine a few ms of steal move p99 and p99.9; summary.json's `machine` section (PushMetrics'
/// `MachineNoise`) reports them beside the percentiles so a reader can tell a slow target from a noisy host.
enum HostProbe {
    /// Steal time of all CPUs so far in nanoseconds (the 8th value of /proc/stat's `cpu` line), or nil
    /// where there is no /proc/stat (not Linux) or it has no steal column.
    static func stealNanoseconds(procStat path: String = "/proc/stat") -> UInt64? {
        guard let text = readFileStart(path, upTo: 512), let ticks = stealTicks(firstLine: text) else { return nil }
        let hz = UInt64(max(1, sysconf(Int32(_SC_CLK_TCK))))
        return ticks * (1_000_000_000 / hz)
    }

    /// The steal value (USER_HZ ticks) of a /proc/stat text whose first line is the `cpu` total line:
    /// `cpu user nice system idle iowait irq softirq steal ...`.
    static func stealTicks(firstLine text: ArraySlice<UInt8>) -> UInt64? {
        var fields: [UInt64] = []
        var value: UInt64 = 0
        var inNumber = false
        var sawLabel = false
        for b in text {
            if b == UInt8(ascii: "\n") { break }
            if b >= UInt8(ascii: "0") && b <= UInt8(ascii: "9") && sawLabel {
                value = value &* 10 &+ UInt64(b - UInt8(ascii: "0"))
                inNumber = true
            } else if b == UInt8(ascii: " ") {
                if inNumber { fields.append(value); value = 0; inNumber = false }
                sawLabel = true
            } else if sawLabel {
                return nil
            }
        }
        if inNumber { fields.append(value) }
        guard text.starts(with: Array("cpu ".utf8)), fields.count >= 8 else { return nil }
        return fields[7]
    }

    /// The 1-minute load average, or nil when unavailable.
    static func loadAverage() -> Double? {
        var loads = [Double](repeating: 0, count: 3)
        return getloadavg(&loads, 3) >= 1 ? loads[0] : nil
    }
}
