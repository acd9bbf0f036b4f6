#if canImport(Glibc)
import Glibc
#endif
import Foundation
import Testing
@testable import PushTransport

/// Background threads (the request log's writer) step out of the way of the driver and gateway threads.
@Suite struct ThreadPriorityTests {
    @Test func aThreadMovedToIdlePriorityRunsInTheIdleClassAndOthersDoNot() async {
        let policies = await withCheckedContinuation { (done: CheckedContinuation<(Int32, Bool, Int32), Never>) in
            let thread = Thread {
                let before = sched_getscheduler(0)
                let moved = moveCurrentThreadToIdlePriority()
                done.resume(returning: (before, moved, sched_getscheduler(0)))
            }
            thread.start()
        }
        #expect(policies.0 == SCHED_OTHER)
        #expect(policies.1)
        #expect(policies.2 == idleSchedulingPolicy)
        #expect(sched_getscheduler(0) != idleSchedulingPolicy, "only the calling thread moves")
    }
}
