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

    @Test func aThreadMovedToRealtimePriorityRunsFIFOAndOthersDoNot() async throws {
        try #require(geteuid() == 0, "SCHED_FIFO needs root (CI runs as root)")
        #expect(realtimePriorityRefusal() == nil)
        #expect(sched_getscheduler(0) == SCHED_OTHER, "the check puts the calling thread back")
        let policies = await withCheckedContinuation { (done: CheckedContinuation<(String?, Int32, Int32), Never>) in
            let thread = Thread {
                let refusal = moveCurrentThreadToRealtimePriority()
                var param = sched_param()
                _ = sched_getparam(0, &param)
                done.resume(returning: (refusal, sched_getscheduler(0), param.sched_priority))
            }
            thread.start()
        }
        #expect(policies.0 == nil)
        #expect(policies.1 == SCHED_FIFO)
        #expect(policies.2 == 1, "the lowest real-time priority")
        #expect(sched_getscheduler(0) == SCHED_OTHER, "only the calling thread moves")
    }

    @Test func schedstatGivesTheWaitAndTheCallingThreadsWaitGrows() async {
        #expect(schedstatWait(ArraySlice("8123 4567 12\n".utf8)) == 4567)
        #expect(schedstatWait(ArraySlice("8123\n".utf8)) == nil)
        #expect(schedstatWait(ArraySlice("8123 x 12\n".utf8)) == nil)
        #expect(schedstatWait(ArraySlice("".utf8)) == nil)
        // Twice as many threads as CPUs spinning at once: each waits for the others.
        let spinners = 2 * max(1, sysconf(Int32(_SC_NPROCESSORS_ONLN)))
        let waits = await withTaskGroup(of: UInt64?.self) { group in
            for _ in 0..<spinners {
                group.addTask {
                    await withCheckedContinuation { (done: CheckedContinuation<UInt64?, Never>) in
                        let thread = Thread {
                            let before = currentThreadCPUWaitNanoseconds() ?? 0
                            var t = timespec()
                            clock_gettime(CLOCK_MONOTONIC, &t)
                            let end = t.tv_sec * 1_000_000_000 + t.tv_nsec + 300_000_000
                            while t.tv_sec * 1_000_000_000 + t.tv_nsec < end { clock_gettime(CLOCK_MONOTONIC, &t) }
                            done.resume(returning: currentThreadCPUWaitNanoseconds().map { $0 - before })
                        }
                        thread.start()
                    }
                }
            }
            var all: [UInt64?] = []
            for await w in group { all.append(w) }
            return all
        }
        // Half of them were off a CPU at any time, for 300 ms: they waited 100 ms or more between them.
        #expect(waits.allSatisfy { $0 != nil })
        #expect(waits.compactMap { $0 }.reduce(0, +) >= 100_000_000, "\(waits)")
    }
}
