import Foundation
import Testing

/// deploy/: the Kubernetes manifests scripts/kubernetes-run renders and the runtime image's Containerfile.
/// No cluster runs here, so the manifests are checked offline: against the Kubernetes API schema
/// (kubernetes-validate), for the Indexed Job's wiring (completion index → --segment, one --start-at),
/// and by running the very shell commands the pods would run, against a gateway on loopback.
@Suite(.serialized) struct DeployTests {
    private static let repository = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .deletingLastPathComponent().deletingLastPathComponent()
    private static let script = repository.appendingPathComponent("scripts/kubernetes-run").path

    /// Runs `executable args` with `env` added to this process's environment.
    static func run(_ executable: String, _ args: [String], env: [String: String] = [:]) throws -> (status: Int32, out: String, err: String) {
        try PushbenchBinary.run(args, executable: URL(fileURLWithPath: executable)) { e in
            e.merge(env) { _, new in new }
        }
    }

    /// Every document of the YAML files, as JSON objects (PyYAML reads them: what kubectl would send).
    static func documents(_ files: [String]) throws -> [[String: Any]] {
        let r = try run("/usr/bin/env", ["python3", "-c", """
            import json, sys, yaml
            print(json.dumps([d for f in sys.argv[1:] for d in yaml.safe_load_all(open(f)) if d is not None]))
            """] + files)
        #expect(r.status == 0, "\(r.err)")
        return try #require(try JSONSerialization.jsonObject(with: Data(r.out.utf8)) as? [[String: Any]])
    }

    static func value(_ o: Any?, _ path: String) -> Any? {
        var cur = o
        for key in path.split(separator: ".") {
            if let i = Int(key) { cur = (cur as? [Any]).flatMap { i < $0.count ? $0[i] : nil } } else { cur = (cur as? [String: Any])?[String(key)] }
        }
        return cur
    }

    static func resource(_ docs: [[String: Any]], kind: String, name: String) throws -> [String: Any] {
        try #require(docs.first { $0["kind"] as? String == kind && value($0, "metadata.name") as? String == name }, "no \(kind) \(name)")
    }

    /// A folder with `pushbench` in it: a stub that prints its arguments one per line, or the real binary.
    static func pathWithPushbench(stub: Bool) throws -> URL {
        let dir = PushbenchBinary.tempDir("pushbench-path")
        let exe = dir.appendingPathComponent("pushbench")
        if stub {
            try "#!/bin/sh\nprintf '%s\\n' \"$@\"\n".write(to: exe, atomically: true, encoding: .utf8)
            chmod(exe.path, 0o755)
        } else {
            let bin = try #require(PushbenchBinary.url, "build pushbench first (swift build --build-tests)")
            try FileManager.default.createSymbolicLink(at: exe, withDestinationURL: bin)
        }
        return dir
    }

    /// PATH with `dir` searched first.
    static func path(first dir: URL) -> String {
        dir.path + ":" + (ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin")
    }

    /// The `sh -c` script of a Job's container.
    static func shellScript(_ job: [String: Any]) throws -> String {
        #expect(value(job, "spec.template.spec.containers.0.command") as? [String] == ["/bin/sh", "-c"])
        return try #require(value(job, "spec.template.spec.containers.0.args.0") as? String)
    }

    @Test(arguments: [1, 16])
    func theManifestsValidateAndWireTheCompletionIndexToTheSegment(agents: Int) throws {
        let out = PushbenchBinary.tempDir("pushbench-kubernetes")
        defer { try? FileManager.default.removeItem(at: out) }
        let before = Date()
        let r = try Self.run(Self.script, ["--agents", "\(agents)", "--rps", "1M", "--duration", "60s", "--image", "registry.test/pushbench:1",
                                           "--gateway", "--create-pvc", "--pvc", "shared-results", "--name", "run-\(agents)",
                                           "--out", out.path, "--dry-run", "--", "--connections", "8"])
        #expect(r.status == 0, "\(r.err)")
        #expect(r.out.contains("--dry-run: not applied; apply with: kubectl apply -f \(out.path)"), "\(r.out)")
        let files = ["00-results-pvc.yaml", "10-gateway.yaml", "20-agents-job.yaml", "30-merge-job.yaml"].map { out.appendingPathComponent($0).path }
        for f in files { #expect(FileManager.default.fileExists(atPath: f), "\(f)") }

        // The Kubernetes API schema, strictly (no field it does not know), offline.
        let v = try Self.run("/usr/bin/env", ["kubernetes-validate", "--strict", "--no-warn"] + files)
        #expect(v.status == 0, "kubernetes-validate (scripts/setup installs it): \(v.out)\(v.err)")
        #expect(v.out.components(separatedBy: " passed for resource ").count - 1 == 5, "\(v.out)")

        let docs = try Self.documents(files)
        let job = try Self.resource(docs, kind: "Job", name: "run-\(agents)-agents")
        #expect(Self.value(job, "spec.completionMode") as? String == "Indexed")
        #expect(Self.value(job, "spec.completions") as? Int == agents)
        #expect(Self.value(job, "spec.parallelism") as? Int == agents, "every agent at once: they share one start time")
        #expect(Self.value(job, "spec.backoffLimit") as? Int == 0, "a retried agent would miss the start time")
        #expect(Self.value(job, "spec.template.spec.restartPolicy") as? String == "Never")
        // One agent per node: the anti-affinity selects the agents' own pod labels.
        let term = Self.value(job, "spec.template.spec.affinity.podAntiAffinity.requiredDuringSchedulingIgnoredDuringExecution.0")
        #expect(Self.value(term, "topologyKey") as? String == "kubernetes.io/hostname")
        let labels = try #require(Self.value(job, "spec.template.metadata.labels") as? [String: String])
        let selector = try #require(Self.value(term, "labelSelector.matchLabels") as? [String: String])
        #expect(!selector.isEmpty && selector.allSatisfy { labels[$0.key] == $0.value })
        #expect(Self.value(job, "spec.template.spec.containers.0.resources.requests.cpu") as? String == "1")
        #expect(Self.value(job, "spec.template.spec.containers.0.resources.limits.cpu") == nil, "no CPU limit: throttling shows as latency")
        #expect(Self.value(job, "spec.template.spec.volumes.0.persistentVolumeClaim.claimName") as? String == "shared-results")
        #expect(Self.value(job, "spec.template.spec.containers.0.volumeMounts.0.mountPath") as? String == "/results")

        // What the last pod runs: its completion index becomes its segment, all pods share the start time.
        let stub = try Self.pathWithPushbench(stub: true)
        defer { try? FileManager.default.removeItem(at: stub) }
        let last = agents - 1
        let a = try Self.run("/bin/sh", ["-c", try Self.shellScript(job)],
                             env: ["JOB_COMPLETION_INDEX": "\(last)", "PATH": Self.path(first: stub)])
        #expect(a.status == 0, "\(a.err)")
        let args = a.out.split(separator: "\n", omittingEmptySubsequences: false).dropLast().map(String.init)
        func after(_ option: String) -> String? { args.firstIndex(of: option).flatMap { $0 + 1 < args.count ? args[$0 + 1] : nil } }
        #expect(args.first == "run")
        #expect(after("--segment") == "\(last)/\(agents)")
        #expect(after("--rps") == "1M" && after("--duration") == "60s", "every agent is given the whole run's rate")
        #expect(after("--target") == "http://run-\(agents)-gateway:8080")
        #expect(after("--out") == "/results/run-\(agents)/agent-\(last)")
        #expect(after("--connections") == "8", "options after -- reach every agent")
        // The default start: two minutes ahead of rendering, on the wall clock, in RFC 3339.
        let startText = try #require(after("--start-at"))
        let start = try #require(ISO8601DateFormatter().date(from: startText), "\(startText)")
        #expect(start.timeIntervalSince(before) > 110 && start.timeIntervalSince(before) < 130, "\(startText)")

        // The merge waits for every agent's folder, then merges them all into merged/.
        let merge = try Self.resource(docs, kind: "Job", name: "run-\(agents)-merge")
        let m = try Self.shellScript(merge)
        #expect(m.contains("while [ \"$i\" -lt \(agents) ]"), "\(m)")
        #expect(m.contains("pushbench merge /results/run-\(agents)/agent-*/latest --out /results/run-\(agents)/merged"), "\(m)")
        #expect(Self.value(merge, "spec.template.spec.volumes.0.persistentVolumeClaim.claimName") as? String == "shared-results")

        let pvc = try Self.resource(docs, kind: "PersistentVolumeClaim", name: "shared-results")
        #expect(Self.value(pvc, "spec.accessModes") as? [String] == ["ReadWriteMany"])
        // The gateway: the Service reaches the Deployment's pods on the port the agents aim at.
        let deployment = try Self.resource(docs, kind: "Deployment", name: "run-\(agents)-gateway")
        let service = try Self.resource(docs, kind: "Service", name: "run-\(agents)-gateway")
        let podLabels = try #require(Self.value(deployment, "spec.template.metadata.labels") as? [String: String])
        let serviceSelector = try #require(Self.value(service, "spec.selector") as? [String: String])
        #expect(serviceSelector.allSatisfy { podLabels[$0.key] == $0.value })
        #expect(Self.value(service, "spec.ports.0.port") as? Int == 8080)
        #expect(Self.value(deployment, "spec.template.spec.containers.0.args") as? [String] == ["gateway", "--listen", "0.0.0.0:8080", "--threads", "2"])
    }

    /// `--dashboard`: each agent serves its live seconds on a named container port, a headless Service over
    /// the agents' pods gives pod I the DNS name the Indexed Job's hostname and subdomain make, and the
    /// dashboard Deployment follows exactly those names, behind a Service of its own. Without it, none of this.
    @Test(arguments: [3, 16])
    func theDashboardFollowsEveryAgentByItsPodsName(agents: Int) throws {
        let out = PushbenchBinary.tempDir("pushbench-kubernetes")
        defer { try? FileManager.default.removeItem(at: out) }
        let name = "live-\(agents)"
        let r = try Self.run(Self.script, ["--agents", "\(agents)", "--rps", "100k", "--duration", "60s", "--image", "registry.test/pushbench:1",
                                           "--target", "http://gw:8080", "--name", name, "--namespace", "bench", "--dashboard",
                                           "--out", out.path, "--dry-run"])
        #expect(r.status == 0, "\(r.err)")
        #expect(r.out.contains("watch it live: kubectl -n bench port-forward svc/\(name)-dashboard 8088:8088"), "\(r.out)")
        let files = ["20-agents-job.yaml", "30-merge-job.yaml", "40-dashboard.yaml"].map { out.appendingPathComponent($0).path }
        let v = try Self.run("/usr/bin/env", ["kubernetes-validate", "--strict", "--no-warn"] + files)
        #expect(v.status == 0, "kubernetes-validate (scripts/setup installs it): \(v.out)\(v.err)")
        #expect(v.out.components(separatedBy: " passed for resource ").count - 1 == 5, "\(v.out)")

        let docs = try Self.documents(files)
        let job = try Self.resource(docs, kind: "Job", name: "\(name)-agents")
        let headless = try Self.resource(docs, kind: "Service", name: "\(name)-agents")
        #expect(Self.value(headless, "spec.clusterIP") as? String == "None")
        #expect(Self.value(headless, "spec.publishNotReadyAddresses") as? Bool == true, "an agent has no readiness probe")
        let podLabels = try #require(Self.value(job, "spec.template.metadata.labels") as? [String: String])
        let selector = try #require(Self.value(headless, "spec.selector") as? [String: String])
        #expect(!selector.isEmpty && selector.allSatisfy { podLabels[$0.key] == $0.value }, "the Service selects the agents' pods")
        // Pod I of an Indexed Job is named JOB-I; under the Service its subdomain names, that is its DNS name.
        #expect(Self.value(job, "spec.template.spec.subdomain") as? String == "\(name)-agents")
        #expect(Self.value(job, "spec.template.spec.containers.0.ports.0.name") as? String == "dashboard")
        #expect(Self.value(job, "spec.template.spec.containers.0.ports.0.containerPort") as? Int == 8088)
        #expect(Self.value(headless, "spec.ports.0.targetPort") as? String == "dashboard")

        let stub = try Self.pathWithPushbench(stub: true)
        defer { try? FileManager.default.removeItem(at: stub) }
        let a = try Self.run("/bin/sh", ["-c", try Self.shellScript(job)], env: ["JOB_COMPLETION_INDEX": "1", "PATH": Self.path(first: stub)])
        let args = a.out.split(separator: "\n").map(String.init)
        func after(_ option: String) -> String? { args.firstIndex(of: option).flatMap { $0 + 1 < args.count ? args[$0 + 1] : nil } }
        #expect(after("--dashboard") == "0.0.0.0:8088", "\(args)")
        #expect(after("--dashboard-linger") != nil, "an agent stays long enough for the dashboard to see it done")

        let dashboard = try Self.resource(docs, kind: "Deployment", name: "\(name)-dashboard")
        let dashArgs = try #require(Self.value(dashboard, "spec.template.spec.containers.0.args") as? [String])
        #expect(dashArgs.first == "dashboard")
        let urls = (0..<agents).map { "http://\(name)-agents-\($0).\(name)-agents:8088" }
        #expect(Array(dashArgs.dropFirst().prefix(agents)) == urls, "every agent, by its pod's name")
        #expect(Array(dashArgs.dropFirst(agents + 1).prefix(2)) == ["--listen", "0.0.0.0:8088"])
        #expect(Self.value(dashboard, "spec.template.spec.containers.0.ports.0.containerPort") as? Int == 8088)
        let service = try Self.resource(docs, kind: "Service", name: "\(name)-dashboard")
        let dashLabels = try #require(Self.value(dashboard, "spec.template.metadata.labels") as? [String: String])
        let dashSelector = try #require(Self.value(service, "spec.selector") as? [String: String])
        #expect(dashSelector.allSatisfy { dashLabels[$0.key] == $0.value } && dashLabels["app.kubernetes.io/component"] == "dashboard")
        #expect(!selector.allSatisfy { dashLabels[$0.key] == $0.value }, "the agents' Service does not select the dashboard")
        // The dashboard command takes what the Deployment gives it: only the --wait added here is refused.
        let check = try PushbenchBinary.run(dashArgs + ["--wait", "0s"])
        #expect(check.status == 2)
        #expect(check.err == "pushbench dashboard: --wait: '0s' is out of range (above 0s, at most 10m) (see 'pushbench dashboard --help')\n",
                "\(check.err)")

        // Without --dashboard the agents serve nothing and there is no dashboard.
        let plain = PushbenchBinary.tempDir("pushbench-kubernetes")
        defer { try? FileManager.default.removeItem(at: plain) }
        let p = try Self.run(Self.script, ["--agents", "2", "--rps", "1000", "--image", "x:1", "--target", "http://gw:8080", "--name", "quiet",
                                           "--out", plain.path, "--dry-run"])
        #expect(p.status == 0, "\(p.err)")
        #expect(!FileManager.default.fileExists(atPath: plain.appendingPathComponent("40-dashboard.yaml").path))
        let plainJob = try Self.resource(try Self.documents([plain.appendingPathComponent("20-agents-job.yaml").path]), kind: "Job", name: "quiet-agents")
        #expect(try !Self.shellScript(plainJob).contains("--dashboard"))
        #expect(Self.value(plainJob, "spec.template.spec.containers.0.ports") == nil)
    }

    /// `--capacity`: the same Indexed Job runs one `pushbench capacity` search across the agents, meeting
    /// under the run's folder on the claim; no merge Job (the search merges every step itself).
    @Test func aCapacitySearchRunsInTheSameIndexedJob() throws {
        let out = PushbenchBinary.tempDir("pushbench-kubernetes")
        defer { try? FileManager.default.removeItem(at: out) }
        let r = try Self.run(Self.script, ["--agents", "4", "--capacity", "--image", "registry.test/pushbench:1", "--target", "http://gw:8080",
                                           "--name", "search", "--out", out.path, "--dry-run", "--", "--slo", "p99<5ms", "--min", "50k"])
        #expect(r.status == 0, "\(r.err)")
        #expect(try FileManager.default.contentsOfDirectory(atPath: out.path) == ["20-agents-job.yaml"])
        let file = out.appendingPathComponent("20-agents-job.yaml").path
        let v = try Self.run("/usr/bin/env", ["kubernetes-validate", "--strict", "--no-warn", file])
        #expect(v.status == 0, "\(v.out)\(v.err)")
        let job = try Self.resource(try Self.documents([file]), kind: "Job", name: "search-agents")
        #expect(Self.value(job, "spec.completionMode") as? String == "Indexed" && Self.value(job, "spec.completions") as? Int == 4)
        let stub = try Self.pathWithPushbench(stub: true)
        defer { try? FileManager.default.removeItem(at: stub) }
        let a = try Self.run("/bin/sh", ["-c", try Self.shellScript(job)], env: ["JOB_COMPLETION_INDEX": "2", "PATH": Self.path(first: stub)])
        let args = a.out.split(separator: "\n").map(String.init)
        func after(_ option: String) -> String? { args.firstIndex(of: option).flatMap { $0 + 1 < args.count ? args[$0 + 1] : nil } }
        #expect(args.first == "capacity")
        #expect(after("--segment") == "2/4" && after("--start-at") != nil)
        #expect(after("--out") == "/results/search", "every agent meets in one folder")
        #expect(after("--slo") == "p99<5ms" && after("--min") == "50k")
        #expect(!args.contains("--rps") && !args.contains("--duration"))
    }

    @Test func thePodsCommandsMakeOneRunWithoutACluster() throws {
        // The gateway the agents aim at, on loopback.
        let gateway = try LoopbackGatewayProcess()
        defer { gateway.stop() }

        let out = PushbenchBinary.tempDir("pushbench-kubernetes")
        defer { try? FileManager.default.removeItem(at: out) }
        // A few seconds ahead; on a machine too busy to start both agents by then, --start-late-ok keeps
        // the schedule (what this test checks is the wiring and the counts, not the lateness).
        let startAt = String(format: "%.3f", Date().timeIntervalSince1970 + 3)
        let r = try Self.run(Self.script, ["--agents", "2", "--rps", "2000", "--duration", "1s", "--image", "pushbench:test",
                                           "--target", gateway.url, "--start-at", startAt, "--name", "local",
                                           "--out", out.appendingPathComponent("manifests").path, "--dry-run",
                                           "--", "--warmup", "0s", "--connections", "1", "--start-late-ok"])
        #expect(r.status == 0, "\(r.err)")
        let docs = try Self.documents(["20-agents-job.yaml", "30-merge-job.yaml"].map { out.appendingPathComponent("manifests/\($0)").path })
        // The volume the pods would mount at /results is a folder here.
        let results = out.appendingPathComponent("volume").path
        func local(_ script: String) -> String { script.replacingOccurrences(of: "/results/", with: results + "/") }
        let agentScript = local(try Self.shellScript(try Self.resource(docs, kind: "Job", name: "local-agents")))
        let mergeScript = local(try Self.shellScript(try Self.resource(docs, kind: "Job", name: "local-merge")))
        let path = try Self.pathWithPushbench(stub: false)
        defer { try? FileManager.default.removeItem(at: path) }
        let env = ProcessInfo.processInfo.environment.merging(["PATH": Self.path(first: path)]) { _, new in new }

        // The merge pod starts with the agents and waits for their folders.
        func start(_ script: String, index: Int?) throws -> (Process, Pipe) {
            let p = Process()
            p.executableURL = URL(fileURLWithPath: "/bin/sh")
            p.arguments = ["-c", script]
            p.environment = index.map { env.merging(["JOB_COMPLETION_INDEX": "\($0)"]) { _, new in new } } ?? env
            let pipe = Pipe()
            p.standardOutput = pipe
            p.standardError = pipe
            try p.run()
            return (p, pipe)
        }
        let pods = [try start(agentScript, index: 0), try start(agentScript, index: 1), try start(mergeScript, index: nil)]
        for (i, (p, pipe)) in pods.enumerated() {
            let text = String(decoding: pipe.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
            p.waitUntilExit()
            #expect(p.terminationStatus == 0, "pod \(i): \(text)")
        }
        let merged = try #require(try JSONSerialization.jsonObject(
            with: Data(contentsOf: URL(fileURLWithPath: results + "/local/merged/summary.json"))) as? [String: Any])
        #expect(PushbenchBinary.int(merged, "config", "agents") == 2)
        #expect(PushbenchBinary.int(merged, "requests", "sent") == 2_000)
        #expect((merged["segments"] as? [String: Any])?["complete"] as? Bool == true)
        let n = { (key: String) in PushbenchBinary.int(merged, "requests", key) }
        #expect(n("sent") == n("completed") + n("transport_errors") + n("unfinished") && n("completed") == n("succeeded") + n("failed"))
        let agent1 = try #require(try JSONSerialization.jsonObject(
            with: Data(contentsOf: URL(fileURLWithPath: results + "/local/agent-1/latest/summary.json"))) as? [String: Any])
        #expect(PushbenchBinary.int(agent1, "segment", "index") == 1 && PushbenchBinary.int(agent1, "requests", "sent") == 1_000)
    }

    /// With kubectl configured (a stand-in here that records what it is asked), the gateway is applied and
    /// waited for before the agents, whose start time is counted from then; a gateway that never becomes
    /// ready stops it before any agent is applied.
    @Test(arguments: [true, false])
    func withAClusterTheGatewayIsReadyBeforeTheAgentsAreApplied(gatewayBecomesReady: Bool) throws {
        let out = PushbenchBinary.tempDir("pushbench-kubernetes")
        defer { try? FileManager.default.removeItem(at: out) }
        let bin = out.appendingPathComponent("bin")
        try FileManager.default.createDirectory(at: bin, withIntermediateDirectories: true)
        let log = out.appendingPathComponent("kubectl.log").path
        let kubectl = bin.appendingPathComponent("kubectl")
        try """
            #!/bin/sh
            echo "$*" >> \(log)
            case "$*" in *"rollout status"*) exit \(gatewayBecomesReady ? 0 : 1) ;; "config current-context") echo test ;; esac
            exit 0
            """.write(to: kubectl, atomically: true, encoding: .utf8)
        chmod(kubectl.path, 0o755)
        let manifests = out.appendingPathComponent("manifests").path
        let r = try Self.run(Self.script, ["--agents", "2", "--rps", "10k..20k", "--duration", "30s", "--image", "pushbench:test", "--gateway",
                                           "--create-pvc", "--name", "applied", "--namespace", "bench", "--out", manifests],
                             env: ["PATH": Self.path(first: bin)])
        let calls = try String(contentsOfFile: log, encoding: .utf8).split(separator: "\n").map(String.init)
        let gateway = ["config current-context", "apply -f \(manifests)/00-results-pvc.yaml", "apply -f \(manifests)/10-gateway.yaml",
                       "-n bench rollout status deployment/applied-gateway --timeout=300s"]
        if gatewayBecomesReady {
            #expect(r.status == 0, "\(r.err)")
            #expect(calls == gateway + ["apply -f \(manifests)/20-agents-job.yaml", "apply -f \(manifests)/30-merge-job.yaml"])
            #expect(r.out.contains("kubectl -n bench wait --for=condition=complete"), "\(r.out)")
        } else {
            #expect(r.status == 1)
            #expect(calls == gateway, "no agent is applied")
            #expect(r.err.contains("the gateway deployment applied-gateway did not become ready"), "\(r.err)")
        }
    }

    @Test(arguments: [
        (["--agents", "0"], "kubernetes-run: --agents: 0 is out of range (1...10000)"),
        (["--agents", "2", "--target", "http://gw:8080", "--gateway"],
         "kubernetes-run: --target: give a target URL, or --gateway to start the mock gateway in the cluster (one of them)"),
        (["--agents", "2", "--target", "gw:8080"], "kubernetes-run: --target: 'gw:8080' is not an http:// or https:// URL"),
        (["--agents", "2", "--gateway", "--lead", "5s"], "kubernetes-run: --lead: 5s is too short for pods to be scheduled (at least 10s)"),
        (["--agents", "2", "--gateway", "--start-at", "2020-01-01T00:00:00Z"],
         "kubernetes-run: --start-at: 2020-01-01T00:00:00Z is in the past (give a time far enough ahead for the pods to be scheduled and connected)"),
        (["--agents", "2", "--gateway", "--start-at", "soon"],
         "kubernetes-run: --start-at: 'soon' is not a time (RFC 3339 with its offset, as 2026-12-01T10:00:00Z, or Unix seconds)"),
        (["--agents", "2", "--gateway", "--duration", "60"], "kubernetes-run: --duration: '60' has no unit: say which, as in 60s or 60m"),
        (["--agents", "2", "--gateway", "--capacity"], "kubernetes-run: --rps: a capacity search chooses its rates (give --min and --max after --)"),
        (["--agents", "2", "--gateway", "--name", "Run_1"],
         "kubernetes-run: --name: 'Run_1' must be lowercase letters, digits and '-' (a DNS label of at most 42 characters)"),
    ])
    func badInputIsOneLineAndExit2(_ c: ([String], String)) throws {
        let out = PushbenchBinary.tempDir("pushbench-kubernetes")
        defer { try? FileManager.default.removeItem(at: out) }
        let r = try Self.run(Self.script, c.0 + ["--rps", "1000", "--image", "pushbench:test", "--out", out.path, "--dry-run"])
        #expect(r.status == 2)
        #expect(r.err == c.1 + "\n")
        #expect(try FileManager.default.contentsOfDirectory(atPath: out.path).isEmpty, "nothing rendered")
    }

    /// Every shared library the binary links is in the image: a Swift runtime library (the Containerfile
    /// copies those the binary links, found by ldd) or a Debian package its runtime stage installs.
    @Test func theRuntimeImageHasEveryLibraryTheBinaryLinks() throws {
        let bin = try #require(PushbenchBinary.url, "build pushbench first (swift build --build-tests)")
        let containerfile = try String(contentsOf: Self.repository.appendingPathComponent("deploy/Containerfile"), encoding: .utf8)
        let runtimeLine = try #require(containerfile.split(separator: "\n").first { $0.hasPrefix("ARG RUNTIME_PACKAGES=") })
        let installed = Set(runtimeLine.split(separator: "\"")[1].split(separator: " ").map(String.init))
        #expect(containerfile.contains(#"awk '$3 ~ /\/lib\/swift\/linux\// { print $3 }'"#), "the Swift libraries are copied by ldd")
        #expect(containerfile.contains("install -y --no-install-recommends ${RUNTIME_PACKAGES}"))

        let ldd = try Self.run("/usr/bin/ldd", [bin.path])
        #expect(ldd.status == 0, "\(ldd.err)")
        let libraries = ldd.out.split(separator: "\n").compactMap { line -> String? in
            let f = line.split(separator: " ")
            return f.count >= 3 && f[1] == "=>" ? String(f[2]) : nil
        }
        #expect(!ldd.out.contains("not found"), "\(ldd.out)")
        #expect(libraries.contains { $0.contains("libnghttp2") } && libraries.contains { $0.contains("libuv") })
        var packages: [String: String] = [:]
        for library in libraries where !library.contains("/lib/swift/linux/") {
            // Debian 12 merged /lib into /usr/lib; dpkg knows each file under one of the two names.
            let real = URL(fileURLWithPath: library).resolvingSymlinksInPath().path
            let names = [library, real] + [library, real].map { $0.hasPrefix("/usr/") ? String($0.dropFirst(4)) : "/usr" + $0 }
            let q = try Self.run("/usr/bin/dpkg", ["-S"] + names)
            let package = q.out.split(separator: "\n").first.map { String($0.split(separator: ":")[0]) }
            packages[library] = try #require(package, "\(library): no Debian package owns it")
        }
        for (library, package) in packages where package != "libc6" {
            #expect(installed.contains(package), "\(library) is in \(package), which deploy/Containerfile does not install")
        }
    }
}
