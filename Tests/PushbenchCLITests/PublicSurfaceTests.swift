import Foundation
import Testing

/// Nothing in a library module is public that no other module uses (docs/architecture.md, "Public
/// is what another module calls"). A source scan, not the compiler: a `public` declaration passes
/// when its name is a word in the code of another module (Sources/, Benchmarks/, the test support
/// modules of Tests/Support/), or, for a type, when it appears in the signature of another public
/// declaration of its own module (a caller meets it without naming it). Tests do not count: they
/// reach internal declarations through `@testable import`. Initializers, subscripts and operators
/// have no name to look for, so the scan does not check them; the types in their signatures count.
@Suite struct PublicSurfaceTests {
    /// The library modules of Sources/ (the executable `pushbench` exports nothing).
    static let libraryModules = ["PushVocabulary", "CommandLineOptions", "PushPayload", "PushMetrics", "PushTransport",
                                 "PushCredentials", "MockGateway", "LoadGenerator", "PushbenchCLI"]

    /// `Module.name` of declarations that are public for a reason the scan cannot see, each with the
    /// reason. Empty while every public declaration shows its use.
    static let allowed: [String: String] = [:]

    /// A public declaration: the module, where it is, its name, the text of its signature, and whether
    /// it declares a type.
    struct Declaration {
        var module: String, place: String, name: String, signature: String, isType: Bool
    }

    static let modifiers: Set<Substring> = ["static", "final", "override", "mutating", "nonmutating", "convenience",
                                            "required", "indirect", "lazy", "nonisolated", "private(set)", "fileprivate(set)",
                                            "internal(set)", "unowned(unsafe)", "unowned", "weak", "dynamic", "public", "open"]
    static let typeKeywords: Set<Substring> = ["struct", "class", "enum", "protocol", "actor", "typealias", "associatedtype"]
    static let memberKeywords: Set<Substring> = ["func", "var", "let"]

    /// The Swift files under `dir` (relative to the repository), as repository-relative paths.
    static func files(under dir: String) -> [String] {
        ArchitectureTests.swiftFiles(under: dir).map { "\(dir)/\($0)" }
    }

    static func read(_ path: String) throws -> String {
        try String(contentsOf: ArchitectureTests.repository.appendingPathComponent(path), encoding: .utf8)
    }

    /// The public declarations of `module` that carry a name: the line starts with attributes and
    /// modifiers, `public` or `open` among them, then a declaration keyword and the name.
    static func publicDeclarations(of module: String, in files: [(path: String, text: String)]) -> [Declaration] {
        var found: [Declaration] = []
        for (path, text) in files {
            let lines = text.split(separator: "\n", omittingEmptySubsequences: false)
            for (index, line) in lines.enumerated() {
                let words = line.split(separator: " ")
                var i = 0
                while i < words.count, words[i].hasPrefix("@") { i += 1 }
                var isPublic = false
                // `class` is a modifier in `class func`, and a keyword in `final class`.
                while i < words.count, modifiers.contains(words[i]) || (words[i] == "class" && i + 1 < words.count
                        && (modifiers.contains(words[i + 1]) || memberKeywords.contains(words[i + 1]))) {
                    if words[i] == "public" || words[i] == "open" { isPublic = true }
                    i += 1
                }
                guard isPublic, i < words.count else { continue }
                let keyword = words[i].prefix { $0.isLetter }
                guard typeKeywords.contains(keyword) || memberKeywords.contains(keyword) || keyword == "init" || keyword == "subscript" else {
                    continue
                }
                // An initializer, a subscript or an operator has no name to look for; its signature still counts.
                let name = typeKeywords.contains(keyword) || memberKeywords.contains(keyword) ? String(
                    (i + 1 < words.count ? words[i + 1] : "").prefix { $0.isLetter || $0.isNumber || $0 == "_" }) : ""
                // The signature runs to the body's brace (not a closure's after `=`); a parameter list spans lines.
                var signature = ""
                for next in lines[index..<min(index + 12, lines.count)] {
                    let body = next.ranges(of: " {").first { next[..<$0.lowerBound].last { $0 != " " } != "=" }
                    signature += " " + next[..<(body?.lowerBound ?? next.endIndex)]
                    if body != nil || !(next.hasSuffix(",") || next.hasSuffix("(")) { break }
                }
                found.append(Declaration(module: module, place: "\(path):\(index + 1)", name: name, signature: signature,
                                         isType: typeKeywords.contains(keyword)))
            }
        }
        return found
    }

    /// The identifiers of `text`, leaving out comment lines (a doc comment naming a type is no use of it).
    static func words(of text: String) -> Set<Substring> {
        var words: Set<Substring> = []
        for line in text.split(separator: "\n") where !line.drop { $0 == " " }.hasPrefix("//") {
            var start: Substring.Index?
            for i in line.indices {
                let c = line[i]
                if c.isLetter || c.isNumber || c == "_" {
                    if start == nil { start = i }
                } else if let s = start {
                    words.insert(line[s..<i]); start = nil
                }
            }
            if let s = start { words.insert(line[s...]) }
        }
        return words
    }

    /// `Module.name  place` of every public declaration of a library module that nothing outside it uses.
    static func unusedPublicDeclarations() throws -> [String] {
        // The code of every module: Sources/<module>, the benchmark targets, the test support targets.
        var wordsByModule: [String: Set<Substring>] = [:]
        for path in files(under: "Sources") + files(under: "Benchmarks") + files(under: "Tests/Support") {
            let parts = path.split(separator: "/")
            let module = parts[0] == "Sources" ? String(parts[1]) : "\(parts[0])/\(parts[1])"
            wordsByModule[module, default: []].formUnion(words(of: try read(path)))
        }
        var unused: [String] = []
        for module in libraryModules {
            let sources = try files(under: "Sources/\(module)").map { (path: $0, text: try read($0)) }
            let declarations = publicDeclarations(of: module, in: sources)
            for d in declarations where !d.name.isEmpty && allowed["\(module).\(d.name)"] == nil {
                if wordsByModule.contains(where: { $0.key != module && $0.value.contains(Substring(d.name)) }) { continue }
                if d.isType, declarations.contains(where: { $0.place != d.place && words(of: $0.signature).contains(Substring(d.name)) }) {
                    continue
                }
                unused.append("\(module).\(d.name)  \(d.place)")
            }
        }
        return unused
    }

    @Test func everyPublicDeclarationIsUsedByAnotherModule() throws {
        let unused = try Self.unusedPublicDeclarations()
        #expect(unused.isEmpty, """
            public, but no other module uses it (make it internal; tests use @testable import):
            \(unused.joined(separator: "\n"))
            """)
    }

    /// The scan sees the declarations at all (a known type, enum and method are found), and it covers
    /// every library module.
    @Test func theScanFindsPublicDeclarations() throws {
        #expect(Set(Self.libraryModules) == Set(try ArchitectureTests.swiftModules()).subtracting(["pushbench"]))
        let sources = try Self.files(under: "Sources/PushMetrics").map { (path: $0, text: try Self.read($0)) }
        let names = Set(Self.publicDeclarations(of: "PushMetrics", in: sources).map(\.name))
        #expect(names.isSuperset(of: ["HdrHistogram", "ResultsWriter", "valueAtPercentile"]), "found \(names.sorted())")
    }

    /// The check fails for a public declaration nothing else names, and passes once another module names it.
    @Test func aStrayPublicDeclarationIsFound() {
        let stray = Self.publicDeclarations(of: "PushMetrics", in: [(path: "Sources/PushMetrics/Stray.swift", text: """
            public struct Stray {
                /// Never called.
                @inline(__always) public static func strayHelper(_ x: Int) -> Int { x }
            }
            """)])
        #expect(stray.map(\.name) == ["Stray", "strayHelper"])
        #expect(stray[1].signature.contains("-> Int") && !stray[1].signature.contains("x }"))
        let elsewhere = Self.words(of: "// strayHelper in a comment\nlet s = Stray()")
        #expect(elsewhere.contains("Stray") && !elsewhere.contains("strayHelper"))
    }
}
