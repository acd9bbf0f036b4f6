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
