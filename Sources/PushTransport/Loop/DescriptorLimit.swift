import Glibc

/// The process's file descriptor limit (RLIMIT_NOFILE): each connection holds one descriptor, so it
/// bounds how many connections a client opens or a server serves.
public enum DescriptorLimit {
    /// RLIM_INFINITY (a macro Swift does not import: all bits set).
    private static let unlimited = rlim_t.max

    /// The soft and hard limits now in force.
    public static var current: (soft: Int, hard: Int) {
        var r = rlimit()
        guard getrlimit(Int32(RLIMIT_NOFILE.rawValue), &r) == 0 else { return (1024, 1024) }
        return (clamp(r.rlim_cur), clamp(r.rlim_max))
    }

    /// Raises the soft limit to the hard one (to the kernel's `nr_open` when the hard limit is
    /// unlimited), as a load generator or a server should at start; returns the soft limit now in force.
    @discardableResult
    public static func raiseToHard() -> Int {
        var r = rlimit()
        guard getrlimit(Int32(RLIMIT_NOFILE.rawValue), &r) == 0 else { return current.soft }
        var target = r.rlim_max
        if target == unlimited { target = rlim_t(nrOpen() ?? 1 << 20) }
        if r.rlim_cur < target {
            var raised = r
            raised.rlim_cur = target
            _ = setrlimit(Int32(RLIMIT_NOFILE.rawValue), &raised)
        }
        return current.soft
    }

    /// Descriptors open in this process now (the entries of /proc/self/fd).
    static var inUse: Int? {
        guard let dir = opendir("/proc/self/fd") else { return nil }
        defer { closedir(dir) }
        var n = 0
        while let e = readdir(dir) {
            if e.pointee.d_name.0 != UInt8(ascii: ".") { n += 1 }
        }
        return n - 1  // the directory stream's own descriptor
    }

    private static func clamp(_ v: rlim_t) -> Int { v == unlimited || v > rlim_t(Int32.max) ? Int(Int32.max) : Int(v) }

    private static func nrOpen() -> Int? {
        guard let f = fopen("/proc/sys/fs/nr_open", "r") else { return nil }
        defer { fclose(f) }
        var line = [CChar](repeating: 0, count: 32)
        guard fgets(&line, Int32(line.count), f) != nil else { return nil }
        let v = line.withUnsafeBufferPointer { strtol($0.baseAddress!, nil, 10) }
        return v > 0 ? v : nil
    }
}
