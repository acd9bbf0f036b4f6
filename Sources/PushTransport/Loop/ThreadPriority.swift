import CUV
#if canImport(Glibc)
import Glibc
#endif

/// Puts the calling thread in Linux's idle scheduling class (`SCHED_IDLE`): it runs on a CPU no other
/// thread wants and never preempts one that is runnable, so background work (writing a request log)
/// does not delay a driver or gateway thread. Under full load it still gets a small share. Returns
/// false when the kernel refuses; the thread then keeps its priority.
@discardableResult
public func moveCurrentThreadToIdlePriority() -> Bool {
    var param = sched_param()
    param.sched_priority = 0
    // On Linux, pid 0 names the calling thread, not the whole process.
    return sched_setscheduler(0, idleSchedulingPolicy, &param) == 0
}

/// Linux's `SCHED_IDLE` (5 in <linux/sched.h>); Glibc's module leaves it out without _GNU_SOURCE.
let idleSchedulingPolicy: Int32 = 5

/// Makes the calling thread real-time (`SCHED_FIFO` at priority 1, the lowest): no ordinary thread of
/// any process preempts it, so a busy neighbour (a daemon at a raised nice level waking for a few
/// milliseconds) cannot hold a driver or gateway loop off its CPU while requests wait. The kernel still
/// keeps a share of every second for ordinary threads (`kernel.sched_rt_runtime_us`). Returns nil, or
/// why the kernel refused (without root or CAP_SYS_NICE: "Operation not permitted").
public func moveCurrentThreadToRealtimePriority() -> String? {
    var param = sched_param()
    param.sched_priority = 1
    guard sched_setscheduler(0, realtimeSchedulingPolicy, &param) == 0 else { return String(cString: strerror(errno)) }
    return nil
}

/// Whether this process may make its threads real-time: nil when it may, or why not. Tries on the
/// calling thread and puts it back to the ordinary policy (always allowed).
public func realtimePriorityRefusal() -> String? {
    var saved = sched_param()
    let policy = sched_getscheduler(0)
    _ = sched_getparam(0, &saved)
    if let refusal = moveCurrentThreadToRealtimePriority() { return refusal }
    _ = sched_setscheduler(0, policy, &saved)
    return nil
}

/// How long the calling thread has been runnable but waiting for a CPU since it started, in ns (the
/// second field of /proc/thread-self/schedstat): the time other threads, of this process or any other,
/// held the CPU it wanted. Nil where the kernel does not keep it.
public func currentThreadCPUWaitNanoseconds() -> UInt64? {
    cpuWaitNanoseconds(schedstatPath: "/proc/thread-self/schedstat")
}

/// The CPU wait of thread `tid` of this process (see ``currentThreadCPUWaitNanoseconds()``).
public func threadCPUWaitNanoseconds(tid: Int32) -> UInt64? {
    cpuWaitNanoseconds(schedstatPath: "/proc/self/task/\(tid)/schedstat")
}

/// The calling thread's kernel id (what /proc/self/task lists).
public func currentThreadID() -> Int32 { pb_gettid() }

func cpuWaitNanoseconds(schedstatPath path: String) -> UInt64? {
    readFileStart(path, upTo: 128).flatMap(schedstatWait)
}

/// The second number of a schedstat text (`run_ns wait_ns timeslices`), or nil when it has fewer than two.
func schedstatWait(_ text: ArraySlice<UInt8>) -> UInt64? {
    var field = 0
    var value: UInt64 = 0
    var inNumber = false
    for b in text {
        if b >= UInt8(ascii: "0") && b <= UInt8(ascii: "9") {
            value = value &* 10 &+ UInt64(b - UInt8(ascii: "0"))
            inNumber = true
        } else if b == UInt8(ascii: " ") || b == UInt8(ascii: "\n") {
            if inNumber {
                if field == 1 { return value }
                field += 1
                value = 0
                inNumber = false
            }
        } else {
            return nil
        }
    }
    return inNumber && field == 1 ? value : nil
}

/// Linux's `SCHED_FIFO` (1 in <linux/sched.h>).
let realtimeSchedulingPolicy: Int32 = 1
