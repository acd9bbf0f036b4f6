import Foundation
import Testing

/// `pushbench gateway --tls-ca-dir DIR`: the generating CA is kept in DIR and reused, so a client whose
/// TLS context was made once (as apns2-up's HTTP/2 stack makes it) trusts every restart.
@Suite(.serialized) struct GatewayCADirectoryTests {
    func directory() -> URL {
        FileManager.default.temporaryDirectory.appendingPathComponent("pushbench-ca-dir-\(UUID().uuidString)")
    }

    /// Python's ssl and h2 as one long-lived client: it starts each gateway in turn (pushbench gateway
    /// with the arguments of one line of its third argument, a JSON list), makes its TLS context once
    /// from DIR/ca.pem after the first has started, and sends one push to each with that same context.
    /// Prints one line per gateway: `status 200`, or `error <why>`.
    static let script = """
    import json, re, signal, socket, ssl, subprocess, sys, time
    import h2.config, h2.connection, h2.events
    binary, cafile, runs = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
    context = None

    def start(extra):
        p = subprocess.Popen([binary, "gateway", "--listen", "127.0.0.1:0"] + extra, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True)
        deadline = time.time() + 30
        while time.time() < deadline:
            line = p.stdout.readline()
            m = re.search(r"127\\.0\\.0\\.1:(\\d+)", line)
            if m: return p, int(m.group(1))
            if not line and p.poll() is not None: break
        p.kill()
        sys.exit("no listening line: " + p.stderr.read())

    def push(port):
        s = context.wrap_socket(socket.create_connection(("127.0.0.1", port), timeout=10), server_hostname="localhost")
        c = h2.connection.H2Connection(h2.config.H2Configuration(client_side=True))
        c.initiate_connection()
        c.send_headers(1, [(":method", "POST"), (":scheme", "https"), (":authority", "localhost"),
                           (":path", "/3/device/" + "ab" * 32), ("apns-topic", "com.example.app")])
        c.send_data(1, b'{"aps":{"alert":"hi"}}', end_stream=True)
        s.sendall(c.data_to_send())
        status = None
        deadline = time.time() + 10
        while status is None and time.time() < deadline:
            data = s.recv(65536)
            if not data: break
            for e in c.receive_data(data):
                if isinstance(e, h2.events.ResponseReceived): status = dict(e.headers)[b":status"].decode()
            s.sendall(c.data_to_send())
        s.close()
        return status

    for extra in runs:
        p, port = start(extra)
        try:
            if context is None:
                context = ssl.create_default_context(cafile=cafile)
                context.set_alpn_protocols(["h2"])
            print("status", push(port), flush=True)
        except ssl.SSLCertVerificationError as e:
            print("error", e.verify_message, flush=True)
        finally:
            p.send_signal(signal.SIGTERM)
            p.wait(timeout=30)
    """

    @Test func twoGatewaysOneAfterTheOtherAreTrustedByOneContextMadeOnce() throws {
        let bin = try #require(GatewayTLSTests.binary, "build pushbench first (swift build --build-tests)")
        let dir = directory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let keep = ["--tls-ca-dir", dir.path]
        // The third gateway makes a new CA, as every one did before --tls-ca-dir: the context made for
        // the first does not trust it, which shows the context is the same one throughout.
        let fresh = ["--tls", "--tls-cert-out", dir.path + "-fresh.pem"]
        defer { unlink(dir.path + "-fresh.pem") }
        let runs = String(decoding: try JSONSerialization.data(withJSONObject: [keep, keep, fresh]), as: UTF8.self)
        let script = temporaryScript("tls-ca-dir", Self.script)
        let r = try runProcess(try GatewayTLSTests.peer("python3"), [script, bin, dir.appendingPathComponent("ca.pem").path, runs],
                               timeout: 180)
        #expect(r.stdout == "status 200\nstatus 200\nerror self-signed certificate in certificate chain\n", "\(r.stdout) \(r.stderr)")

        let key = dir.appendingPathComponent("ca-key.pem").path
        let mode = (try FileManager.default.attributesOfItem(atPath: key)[.posixPermissions] as? NSNumber)?.intValue
        #expect(mode == 0o600, "ca-key.pem mode \(String(mode ?? 0, radix: 8))")
        #expect(try String(contentsOfFile: key, encoding: .utf8).hasPrefix("-----BEGIN PRIVATE KEY-----"))
        #expect(try FileManager.default.contentsOfDirectory(atPath: dir.path).sorted() == ["ca-key.pem", "ca.pem"])
    }

    @Test func curlTrustsTheKeptCertificateAcrossRestartsAndItStaysAsItWas() throws {
        let dir = directory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let caFile = dir.appendingPathComponent("ca.pem").path
        var kept: [String] = []
        for round in 0..<2 {
            let g = try GatewayTLSTests.TLSGateway(["--tls-ca-dir", dir.path])
            kept.append(try String(contentsOfFile: caFile, encoding: .utf8))
            #expect(try String(contentsOfFile: g.caFile, encoding: .utf8) == kept[round], "--tls-cert-out gets the kept CA")
            let ok = try g.curl(["--cacert", caFile, "-o", "/dev/null", "-w", "%{http_code}"] + GatewayTLSTests.push
                                + ["https://api.push.apple.com:\(g.port)/3/device/\(validToken)"])
            #expect(ok.stdout == "200", "round \(round): curl: \(ok.stderr)")
            #expect(g.stop().status == 0)
        }
        #expect(kept[0] == kept[1])
    }

    @Test func withoutCertOutTheFirstLineNamesTheKeptCA() throws {
        let bin = try #require(GatewayTLSTests.binary)
        let dir = directory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let child = try startProcess(bin, ["gateway", "--listen", "127.0.0.1:0", "--tls-ca-dir", dir.path])
        var seen = ""
        let deadline = Date().addingTimeInterval(30)
        while !seen.contains("\n") && Date() < deadline {
            usleep(50_000)
            seen = child.peekStdout()
        }
        kill(child.process.processIdentifier, SIGTERM)
        _ = child.finish(timeout: 30)
        #expect(seen.contains("clients trust \(dir.appendingPathComponent("ca.pem").path)"), "\(seen)")
    }

    @Test func anEmbeddedGatewayOfARunKeepsItsCAThere() throws {
        let bin = try #require(GatewayTLSTests.binary)
        let dir = directory()
        defer { try? FileManager.default.removeItem(at: dir) }
        var kept: [String] = []
        for round in 0..<2 {
            let out = dir.appendingPathComponent("results-\(round)").path
            let r = try runProcess(bin, ["run", "--tls", "--gateway-arg=--tls-ca-dir=\(dir.appendingPathComponent("ca").path)",
                                         "--requests", "50", "--quiet", "--out", out], timeout: 120)
            #expect(r.status == 0, "round \(round): \(r.stderr)")
            kept.append(try String(contentsOfFile: dir.appendingPathComponent("ca/ca.pem").path, encoding: .utf8))
        }
        #expect(kept[0] == kept[1] && kept[0].hasPrefix("-----BEGIN CERTIFICATE-----"))
    }

    @Test func aCADirectoryThatCannotBeUsedExitsTwoNamingIt() throws {
        let bin = try #require(GatewayTLSTests.binary)
        let dir = directory()
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        func make(_ name: String, files: [String: String] = [:], directories: [String] = []) throws -> String {
            let d = dir.appendingPathComponent(name)
            try FileManager.default.createDirectory(at: d, withIntermediateDirectories: true)
            for (file, text) in files { try Data(text.utf8).write(to: d.appendingPathComponent(file)) }
            for sub in directories { try FileManager.default.createDirectory(at: d.appendingPathComponent(sub), withIntermediateDirectories: true) }
            return d.path
        }
        // A good CA in one directory; its key beside another CA's certificate does not belong there.
        let good = dir.appendingPathComponent("good").path
        let first = try runProcess(bin, ["run", "--tls", "--gateway-arg=--tls-ca-dir=\(good)", "--requests", "10", "--quiet",
                                         "--out", dir.appendingPathComponent("results").path], timeout: 120)
        #expect(first.status == 0, "\(first.stderr)")
        let other = dir.appendingPathComponent("other").path
        _ = try runProcess(bin, ["run", "--tls", "--gateway-arg=--tls-ca-dir=\(other)", "--requests", "10", "--quiet",
                                 "--out", dir.appendingPathComponent("results").path], timeout: 120)
        let goodCert = try String(contentsOfFile: good + "/ca.pem", encoding: .utf8)
        let otherKey = try String(contentsOfFile: other + "/ca-key.pem", encoding: .utf8)
        let notAFile = dir.appendingPathComponent("plain").path
        try Data("x".utf8).write(to: URL(fileURLWithPath: notAFile))

        let cases: [(String, String)] = [
            (try make("junk", files: ["ca.pem": "not a certificate", "ca-key.pem": otherKey]), "/ca.pem: no PEM certificate in it"),
            (try make("nokey", files: ["ca.pem": goodCert]), " holds ca.pem but not ca-key.pem: put it back, or empty the directory to make a new CA"),
            (try make("nocert", files: ["ca-key.pem": otherKey]), " holds ca-key.pem but not ca.pem"),
            (try make("mixed", files: ["ca.pem": goodCert, "ca-key.pem": otherKey]), "/ca-key.pem: not the key of "),
            (try make("unreadable", files: ["ca-key.pem": otherKey], directories: ["ca.pem"]), "/ca.pem: Is a directory"),
            (notAFile, ": not a directory"),
        ]
        for (path, message) in cases {
            let r = try runProcess(bin, ["gateway", "--listen", "127.0.0.1:0", "--tls-ca-dir", path], timeout: 30)
            #expect(r.status == 2, "\(path): \(r.stdout) \(r.stderr)")
            #expect(r.stderr.hasPrefix("pushbench gateway: --tls-ca-dir: \(path)"), "\(r.stderr)")
            #expect(r.stderr.contains(message), "\(r.stderr)")
        }
        let withFiles = try runProcess(bin, ["gateway", "--tls-cert", "/etc/hostname", "--tls-key", "/etc/hostname", "--tls-ca-dir", good],
                                       timeout: 30)
        #expect(withFiles.status == 2)
        #expect(withFiles.stderr.hasPrefix("pushbench gateway: --tls-ca-dir: keeps the CA of a generated certificate, not one given with --tls-cert"),
                "\(withFiles.stderr)")
        let empty = try runProcess(bin, ["gateway", "--tls-ca-dir", ""], timeout: 30)
        #expect(empty.status == 2 && empty.stderr.hasPrefix("pushbench gateway: --tls-ca-dir: the directory name is empty"), "\(empty.stderr)")
    }
}
