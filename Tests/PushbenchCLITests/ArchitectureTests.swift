import Foundation
import Testing

/// The module layering docs/architecture.md draws, checked against every `import` in Sources/: a
/// module may import only modules of a lower layer (and the C bridges its Package.swift entry names).
/// Also the folder rules the page's "Where each concern lives" sets out.
@Suite struct ArchitectureTests {
    static let repository = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()

    /// The layer of each module of the package, as docs/architecture.md draws it.
    static let layers: [String: Int] = [
        "CUV": 0, "CNGHTTP2": 0, "CZlib": 0, "COpenSSL": 0, "CHTTPParser": 0,
        "PushVocabulary": 1,
        "CommandLineOptions": 2, "PushPayload": 2, "PushMetrics": 2, "PushTransport": 2, "PushCredentials": 2,
        "MockGateway": 3,
        "LoadGenerator": 4,
        "PushbenchCLI": 5,
        "pushbench": 6,
    ]

    /// Every `import X` of one module's sources, with the file it is in.
    static func imports(of module: String) throws -> [(file: String, imported: String)] {
        let dir = repository.appendingPathComponent("Sources/\(module)")
        guard let files = FileManager.default.enumerator(atPath: dir.path) else { return [] }
        var found: [(String, String)] = []
        for case let file as String in files where file.hasSuffix(".swift") {
            let text = try String(contentsOf: dir.appendingPathComponent(file), encoding: .utf8)
            for line in text.split(separator: "\n") {
                let words = line.split(separator: " ")
                // `import X`, `@testable import X`, `public import X`, `import struct X.Y`
                guard let i = words.firstIndex(of: "import"), i + 1 < words.count else { continue }
                guard words[..<i].allSatisfy({ $0.hasPrefix("@") || ["public", "internal", "package", "private", "fileprivate"].contains($0) }) else { continue }
                var name = words[i + 1]
                if ["struct", "class", "enum", "protocol", "func", "typealias", "var", "let"].contains(name), i + 2 < words.count {
                    name = words[i + 2]
                }
                found.append(("Sources/\(module)/\(file)", String(name.split(separator: ".")[0])))
            }
        }
        return found
    }

    @Test func everyModuleImportsOnlyFromLowerLayers() throws {
        var violations: [String] = []
        for (module, layer) in Self.layers where layer > 0 {
            for (file, imported) in try Self.imports(of: module) {
                guard let other = Self.layers[imported] else { continue }  // Foundation, Glibc, Testing …
                if other >= layer { violations.append("\(file) imports \(imported) (layer \(other)) from layer \(layer)") }
            }
        }
        #expect(violations.isEmpty, "\(violations.joined(separator: "\n"))")
    }

    /// PushTransport knows nothing of push, and the leaf stays a leaf (no C, no Foundation).
    @Test func theTransportAndTheLeafStayIgnorantOfWhatIsAboveThem() throws {
        let transport = try Self.imports(of: "PushTransport").map(\.imported)
        #expect(!transport.contains("PushVocabulary") && !transport.contains("PushPayload"))
        // The load generator meets the gateway only over the wire; the command starts an embedded one.
        #expect(!(try Self.imports(of: "LoadGenerator").map(\.imported)).contains("MockGateway"))
        let leaf = Set(try Self.imports(of: "PushVocabulary").map(\.imported))
        #expect(leaf.isSubset(of: ["Synchronization"]), "PushVocabulary imports \(leaf.sorted())")
    }

    /// Every Swift module in Sources/ has a layer here, so a new module cannot slip past the check.
    @Test func everyModuleHasALayer() throws {
        let modules = try FileManager.default.contentsOfDirectory(atPath: Self.repository.appendingPathComponent("Sources").path)
            .filter { !$0.hasPrefix(".") && $0 != "CAllocCounter" }
        let missing = modules.filter { Self.layers[$0] == nil }
        #expect(missing.isEmpty, "modules with no layer in ArchitectureTests and docs/architecture.md: \(missing)")
    }

    /// docs/architecture.md has a row for every Swift module of Sources/ and names every C bridge, so a
    /// newcomer finds any module there.
    @Test func theArchitecturePageNamesEveryModule() throws {
        let page = try String(contentsOf: Self.repository.appendingPathComponent("docs/architecture.md"), encoding: .utf8)
        let rows = Set(page.split(separator: "\n").filter { $0.hasPrefix("| ") }.compactMap { $0.split(separator: "|").first?.trimmingCharacters(in: .whitespaces) })
        let modules = try FileManager.default.contentsOfDirectory(atPath: Self.repository.appendingPathComponent("Sources").path)
            .filter { !$0.hasPrefix(".") }
        #expect(modules.contains("PushVocabulary"))
        let bridges = modules.filter { Self.layers[$0] == 0 || $0 == "CAllocCounter" }
        let missingRows = modules.filter { !bridges.contains($0) && !rows.contains($0) }.sorted()
        #expect(missingRows.isEmpty, "docs/architecture.md's module table has no row for \(missingRows)")
        let unnamed = bridges.filter { !page.contains($0) }.sorted()
        #expect(unnamed.isEmpty, "docs/architecture.md does not name \(unnamed)")
    }

    /// The folders of each module that has them, as docs/architecture.md lists them. A module not named
    /// here is flat.
    static let folders: [String: Set<String>] = [
        "PushTransport": ["Loop", "Bytes", "TLS", "HTTP2", "HTTP1", "Server"],
        "LoadGenerator": ["Pacing", "Driver", "Recording", "Connections", "Credentials", "Runs", "Pipeline"],
        "MockGateway": ["APNs", "Auth", "FCM", "Server", "Configuration", "Stats", "Pipeline"],
        "PushMetrics": ["Histograms", "Results", "Charts", "Comparison", "Live"],
        "PushbenchCLI": ["Commands", "Execution", "Output"],
    ]

    /// The Swift files under `dir`, as paths relative to it.
    static func swiftFiles(under dir: String) -> [String] {
        let url = repository.appendingPathComponent(dir)
        guard let files = FileManager.default.enumerator(atPath: url.path) else { return [] }
        return files.compactMap { $0 as? String }.filter { $0.hasSuffix(".swift") }.sorted()
    }

    /// The Swift modules of Sources/ (no C bridge, no allocation counter).
    static func swiftModules() throws -> [String] {
        try FileManager.default.contentsOfDirectory(atPath: repository.appendingPathComponent("Sources").path)
            .filter { layers[$0].map { $0 > 0 } ?? false }.sorted()
    }

    /// A foldered module keeps every file in one of its folders; a flat module has no folders.
    @Test func everySourceFileSitsInAFolderOfItsModule() throws {
        var misplaced: [String] = []
        for module in try Self.swiftModules() {
            let allowed = Self.folders[module] ?? []
            for file in Self.swiftFiles(under: "Sources/\(module)") {
                let parts = file.split(separator: "/").map(String.init)
                let fits = allowed.isEmpty ? parts.count == 1 : parts.count == 2 && allowed.contains(parts[0])
                if !fits { misplaced.append("Sources/\(module)/\(file)") }
            }
        }
        #expect(misplaced.isEmpty, "files outside their module's folders (ArchitectureTests.folders): \(misplaced)")
    }

    /// A test target's folders mirror its module's: the unit tests of `Module/Folder/` sit in
    /// `ModuleTests/Folder/`, and a test target has no folder its module lacks.
    @Test func testFoldersMirrorSourceFolders() throws {
        var strays: [String] = []
        for module in try Self.swiftModules() {
            let sourceFolders = Self.folders[module] ?? []
            for file in Self.swiftFiles(under: "Tests/\(module)Tests") {
                let parts = file.split(separator: "/").map(String.init)
                if parts.count > 2 || (parts.count == 2 && !sourceFolders.contains(parts[0])) {
                    strays.append("Tests/\(module)Tests/\(file)")
                }
            }
        }
        #expect(strays.isEmpty, "test files in a folder their module does not have: \(strays)")
    }

    /// docs/architecture.md names every folder, so its table is a guide to the listing.
    @Test func theArchitecturePageNamesEveryFolder() throws {
        let page = try String(contentsOf: Self.repository.appendingPathComponent("docs/architecture.md"), encoding: .utf8)
        var unnamed: [String] = []
        for (module, folders) in Self.folders {
            for folder in folders where !page.contains("`\(module)/\(folder)/`") { unnamed.append("\(module)/\(folder)/") }
            let onDisk = try FileManager.default.contentsOfDirectory(atPath: Self.repository.appendingPathComponent("Sources/\(module)").path)
            #expect(Set(onDisk.filter { !$0.hasPrefix(".") }) == folders, "Sources/\(module) holds \(onDisk.sorted()), ArchitectureTests lists \(folders.sorted())")
        }
        #expect(unnamed.isEmpty, "docs/architecture.md does not name \(unnamed.sorted())")
    }

    /// No source file is over 500 lines: a longer one holds more than one concern, or a type that wants
    /// an extension in a file of its own.
    @Test func noSourceFileIsOver500Lines() throws {
        var long: [String] = []
        for module in try Self.swiftModules() {
            for file in Self.swiftFiles(under: "Sources/\(module)") {
                let text = try String(contentsOf: Self.repository.appendingPathComponent("Sources/\(module)/\(file)"), encoding: .utf8)
                let lines = text.split(separator: "\n", omittingEmptySubsequences: false).count - (text.hasSuffix("\n") ? 1 : 0)
                if lines > 500 { long.append("Sources/\(module)/\(file): \(lines) lines") }
            }
        }
        #expect(long.isEmpty, "source files over 500 lines: \(long)")
    }
}
