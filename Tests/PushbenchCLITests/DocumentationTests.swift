import Foundation
@testable import PushMetrics
import Testing

/// The documentation stands alone: every link in README.md, docs/ and examples/ points at a file (and
/// heading) of this repository, and every page a doc, a source comment or a script names exists here.
@Suite struct DocumentationTests {
    static let repository = ArchitectureTests.repository

    /// README.md, examples/README.md and every docs/*.md, as paths relative to the repository.
    static func pages() throws -> [String] {
        let docs = try FileManager.default.contentsOfDirectory(atPath: repository.appendingPathComponent("docs").path)
            .filter { $0.hasSuffix(".md") }.sorted().map { "docs/" + $0 }
        return ["README.md", "examples/README.md"] + docs
    }

    static func text(_ path: String) throws -> String {
        try String(contentsOf: repository.appendingPathComponent(path), encoding: .utf8)
    }

    /// The README's first commands are the two that set up a fresh machine and run the headline load
    /// and the test suite; CI calls the second through .ci/run.
    @Test func theReadmeStartsWithTheRunAndTheTestCommands() throws {
        let commands = try Self.text("README.md").split(separator: "\n").filter { $0.hasPrefix("    ") }
            .prefix(2).map { $0.trimmingCharacters(in: .whitespaces).split(separator: "#")[0].trimmingCharacters(in: .whitespaces) }
        #expect(commands == ["scripts/pushbench --rps 50000", "scripts/test"])
        #expect(try Self.text(".ci/run").contains("scripts/test"))
    }

    /// The lines of `markdown` outside code blocks, with code spans blanked.
    static func prose(_ markdown: String) -> [String] {
        var lines: [String] = []
        var fenced = false
        for line in markdown.split(separator: "\n", omittingEmptySubsequences: false) {
            if line.hasPrefix("```") { fenced.toggle(); continue }
            if fenced || line.hasPrefix("    ") { continue }
            lines.append(line.split(separator: "`", omittingEmptySubsequences: false).enumerated()
                .filter { $0.offset % 2 == 0 }.map(\.element).joined(separator: " "))
        }
        return lines
    }

    /// The target of every link in `markdown`, outside code blocks and code spans: `[text](target)`,
    /// `![alt](target)`, a reference definition `[label]: target`, and HTML `href="target"` / `src="target"`.
    static func links(in markdown: String) -> [String] {
        var found: [String] = []
        for line in prose(markdown) {
            var rest = Substring(line)
            while let open = rest.range(of: "](") {
                let after = rest[open.upperBound...]
                guard let close = after.firstIndex(of: ")") else { break }
                found.append(String(after[..<close]))
                rest = after[close...]
            }
            let trimmed = line.drop { $0 == " " }
            if trimmed.hasPrefix("["), let colon = trimmed.range(of: "]: ") {
                let target = trimmed[colon.upperBound...].drop { $0 == " " }.prefix { $0 != " " }
                if !target.isEmpty { found.append(String(target.trimmingCharacters(in: CharacterSet(charactersIn: "<>")))) }
            }
            for attribute in ["href=\"", "src=\""] {
                var rest = Substring(line)
                while let open = rest.range(of: attribute) {
                    let after = rest[open.upperBound...]
                    guard let close = after.firstIndex(of: "\"") else { break }
                    found.append(String(after[..<close]))
                    rest = after[close...]
                }
            }
        }
        return found
    }

    /// Why `link`, found on `page`, points outside the repository, or nil when it stays inside: a URL,
    /// an absolute path, or a relative one that climbs above the repository's root. A path is judged
    /// by its text, not by what this machine has beside the repository (a fresh clone has nothing there).
    static func outside(_ link: String, on page: String) -> String? {
        if link.contains("://") || link.hasPrefix("mailto:") || link.hasPrefix("//") { return "points outside the repository" }
        let file = String(link.split(separator: "#", maxSplits: 1, omittingEmptySubsequences: false)[0])
        if file.hasPrefix("/") || file.hasPrefix("~") { return "is an absolute path, outside the repository" }
        let folder = (page as NSString).deletingLastPathComponent
        var depth = 0
        for part in ((folder as NSString).appendingPathComponent(file) as NSString).pathComponents {
            if part == ".." { depth -= 1 } else if part != "." { depth += 1 }
            if depth < 0 { return "climbs out of the repository" }
        }
        return nil
    }

    /// GitHub's anchor of a heading: lower case, punctuation dropped, spaces to hyphens.
    static func anchor(_ heading: String) -> String {
        String(heading.lowercased().compactMap { c -> Character? in
            if c == " " { return "-" }
            if c.isLetter || c.isNumber || c == "-" || c == "_" { return c }
            return nil
        })
    }

    static func anchors(of page: String) throws -> Set<String> {
        var set = Set<String>()
        var fenced = false
        for line in try text(page).split(separator: "\n") {
            if line.hasPrefix("```") { fenced.toggle(); continue }
            guard !fenced, line.hasPrefix("#") else { continue }
            set.insert(anchor(String(line.drop(while: { $0 == "#" }).drop(while: { $0 == " " }))))
        }
        return set
    }

    @Test func everyLinkResolvesInsideTheRepository() throws {
        var problems: [String] = []
        for page in try Self.pages() {
            let folder = (page as NSString).deletingLastPathComponent
            for link in Self.links(in: try Self.text(page)) {
                if let why = Self.outside(link, on: page) {
                    problems.append("\(page): \(link) \(why)")
                    continue
                }
                let parts = link.split(separator: "#", maxSplits: 1, omittingEmptySubsequences: false).map(String.init)
                let file = parts[0].isEmpty ? page : ((folder as NSString).appendingPathComponent(parts[0]) as NSString).standardizingPath
                var isDirectory: ObjCBool = false
                guard FileManager.default.fileExists(atPath: Self.repository.appendingPathComponent(file).path, isDirectory: &isDirectory) else {
                    problems.append("\(page): \(link): no file \(file)")
                    continue
                }
                if parts.count == 2, !isDirectory.boolValue, file.hasSuffix(".md"), !(try Self.anchors(of: file)).contains(parts[1]) {
                    problems.append("\(page): \(link): no heading #\(parts[1]) in \(file)")
                }
            }
        }
        #expect(problems == [])
    }

    /// No page's prose points at the web: outside code (commands, which may name a real host that
    /// `--resolve` or /etc/hosts sends to loopback), a URL's host must be a number, `localhost` or a
    /// placeholder without a dot (`http://host:port`).
    @Test func noPageLinksToTheWeb() throws {
        var problems: [String] = []
        for page in try Self.pages() {
            for line in Self.prose(try Self.text(page)) {
                var rest = Substring(line)
                while let scheme = rest.range(of: "://") {
                    let host = rest[scheme.upperBound...].prefix { $0.isLetter || $0.isNumber || $0 == "." || $0 == "-" }
                    let numeric = host.allSatisfy { $0.isNumber || $0 == "." }
                    if !numeric, host != "localhost", host.contains(".") { problems.append("\(page): \(host)") }
                    rest = rest[scheme.upperBound...]
                }
            }
        }
        #expect(problems == [])
    }

    /// Every `NAME.md` a page, a source comment or a script mentions is a file of this repository: the
    /// docs do not lean on pages that live elsewhere.
    @Test func everyNamedPageExists() throws {
        var files = try Self.pages()
        for folder in ["Sources", "Tests", "Benchmarks", "scripts"] {
            let base = Self.repository.appendingPathComponent(folder)
            guard let walk = FileManager.default.enumerator(atPath: base.path) else { continue }
            // This file names missing pages on purpose, in its own test of pageNames.
            for case let file as String in walk where !file.contains("Fixtures/") && !file.hasSuffix("DocumentationTests.swift")
                && ["swift", "c", "h", "py", ""].contains((file as NSString).pathExtension) {
                files.append(folder + "/" + file)
            }
        }
        let known = Set(try Self.pages().map { ($0 as NSString).lastPathComponent })
        // Files a run or a script writes, named in the docs as outputs rather than pages.
        let outputs: Set<String> = ["comparison.md", "capacity.md", "nightly.md"]
        var problems: [String] = []
        for file in files {
            var isDirectory: ObjCBool = false
            guard FileManager.default.fileExists(atPath: Self.repository.appendingPathComponent(file).path, isDirectory: &isDirectory),
                  !isDirectory.boolValue, let text = try? Self.text(file) else { continue }
            for word in Self.pageNames(in: text) {
                let besideIt = ((file as NSString).deletingLastPathComponent as NSString).appendingPathComponent(word)
                let exists = word.contains("/")
                    ? [word, besideIt].contains { FileManager.default.fileExists(atPath: Self.repository.appendingPathComponent($0).path) }
                    : known.contains(word) || outputs.contains(word)
                if !exists { problems.append("\(file): \(word)") }
            }
        }
        #expect(problems == [])
    }

    /// The page names in `text`: `name.md` in lower case, or a path to one under docs/ or examples/
    /// (`../docs/x.md` too); a shell variable's `$name.md` or an output folder's `DIR/nightly.md` is none.
    static func pageNames(in text: String) -> [String] {
        var names: [String] = []
        var word = ""
        var before: Character = " "
        for c in text + " " {
            if c.isLetter || c.isNumber || c == "-" || c == "_" || c == "." || c == "/" {
                if word.isEmpty, c == "/" { before = c; continue }
                word.append(c)
                continue
            }
            defer { word = ""; before = c }
            guard word.hasSuffix(".md"), before != "$", before != "}" else { continue }
            let name = (word as NSString).lastPathComponent
            guard let first = name.first, first.isLowercase, name.dropLast(3).allSatisfy({ $0.isLowercase || $0.isNumber || $0 == "-" }) else { continue }
            if !word.contains("/") || word.hasPrefix("docs/") || word.hasPrefix("examples/") || word.hasPrefix("../") { names.append(word) }
        }
        return names
    }

    /// The project's background notes live outside the repository; no page may lean on them, in a link
    /// or in words (a fresh clone does not have them).
    @Test func noPageNamesWhatLivesOutsideTheRepository() throws {
        var problems: [String] = []
        for page in try Self.pages() {
            let text = try Self.text(page)
            for word in ["push-protocols", "shared/docs", "hdrhistogram-formats.md", "/work/"] where text.contains(word) {
                problems.append("\(page): \(word)")
            }
        }
        #expect(problems == [])
    }

    /// Words that tell how the project was built rather than how to use it: a work session, an issue
    /// number (`issue 14`, `#14`), a work branch, who helped. Figures stay, with their commands and dates.
    static let historyPatterns = [#"\bsession \d"#, #"\bissues? #?\d"#, #"(?<![\w&/#`])#\d+\b"#, #"\blanes?/"#,
                                  #"\bhelpers?\b"#]

    /// The patterns of ``historyPatterns`` that `line` matches.
    static func history(in line: String) -> [String] {
        historyPatterns.filter { line.range(of: $0, options: [.regularExpression, .caseInsensitive]) != nil }
    }

    /// The user docs carry no internal history (docs/ keeps dated figures, not who did what when).
    @Test func noPageTellsInternalHistory() throws {
        var problems: [String] = []
        for page in try Self.pages() {
            for (n, line) in try Self.text(page).split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
                for pattern in Self.history(in: String(line)) { problems.append("\(page):\(n + 1): \(pattern): \(line)") }
            }
        }
        #expect(problems == [])
    }

    @Test func internalHistoryIsCaughtAndUsageIsNot() {
        for line in ["Session 3, no change to the route", "fixed in issue 14", "see Issue #14", "(#14)", "on lane/fcm",
                     "the credentials the helper writes"] {
            #expect(Self.history(in: line) != [], "\(line)")
        }
        for line in ["the HTTP/2 session starts at accept", "session tickets", "issues a GOAWAY", "## 3. Steps",
                     "`#1`", "&#160;", "[a](#stats)"] {
            #expect(Self.history(in: line) == [], "\(line)")
        }
    }

    /// The unit tables of `page` for `file` (rows `| \`file\` | \`a\`, \`b\` | unit |`): each column or
    /// metric a row names, with its unit.
    static func units(in page: String, of file: String) throws -> [String: String] {
        var units: [String: String] = [:]
        for line in try text(page).split(separator: "\n") {
            let cells = line.trimmingCharacters(in: .whitespaces).split(separator: "|", omittingEmptySubsequences: false)
                .map { $0.trimmingCharacters(in: .whitespaces) }
            guard cells.count == 5, cells[1] == "`\(file)`" else { continue }
            for name in cells[2].split(separator: ",") {
                units[name.trimmingCharacters(in: CharacterSet(charactersIn: " `"))] = cells[3]
            }
        }
        return units
    }

    /// docs/results.md names the unit of every column timeline.csv and history.csv are written with.
    @Test func resultsDocNamesTheUnitOfEveryCSVColumn() throws {
        for (file, header) in [("timeline.csv", ResultsWriter.timelineHeader), ("history.csv", ReportChart.HistoryRow.csvHeader)] {
            let units = try Self.units(in: "docs/results.md", of: file)
            for column in header.split(separator: ",") {
                #expect(!(units[String(column)] ?? "").isEmpty, "docs/results.md gives no unit for \(file) \(column)")
            }
        }
    }

    /// docs/nightly.md names the unit of every metric comparison.json's differences can hold.
    @Test func nightlyDocNamesTheUnitOfEveryComparisonMetric() throws {
        let units = try Self.units(in: "docs/nightly.md", of: "comparison.json")
        for metric in RunComparison.metrics.map(\.name) + ["cpu_s_per_million"] {
            #expect(!(units[metric] ?? "").isEmpty, "docs/nightly.md gives no unit for comparison.json metric \(metric)")
        }
    }

    @Test func linksOutsideTheRepositoryAreCaught() {
        #expect(Self.outside("fcm.md#tokens", on: "docs/gateway.md") == nil)
        #expect(Self.outside("../README.md", on: "docs/gateway.md") == nil)
        #expect(Self.outside("docs/fcm.md", on: "README.md") == nil)
        #expect(Self.outside("#limits", on: "README.md") == nil)
        // Whether or not the file is there on this machine.
        #expect(Self.outside("../../shared/docs/push-protocols.md", on: "docs/fcm.md") == "climbs out of the repository")
        #expect(Self.outside("../shared/docs/push-protocols.md#fcm", on: "README.md") == "climbs out of the repository")
        #expect(Self.outside("docs/../../x.md", on: "README.md") == "climbs out of the repository")
        #expect(Self.outside("/work/shared/docs/push-protocols.md", on: "docs/fcm.md") == "is an absolute path, outside the repository")
        #expect(Self.outside("https://firebase.google.com/docs", on: "docs/fcm.md") == "points outside the repository")
        #expect(Self.links(in: "[ref]: ../../shared/docs/design.md\n<a href=\"x.md\">x</a> <img src=\"y.svg\">")
                == ["../../shared/docs/design.md", "x.md", "y.svg"])
    }

    @Test func linksAreFoundAndAnchorsMatchGitHubs() {
        #expect(Self.links(in: "see [a](docs/a.md) and `[b](x)` and [c](#d-e)\n    [code](no)") == ["docs/a.md", "#d-e"])
        #expect(Self.anchor("Statuses and reasons") == "statuses-and-reasons")
        #expect(Self.anchor("Guesses (what protocols.md marks unverified)") == "guesses-what-protocolsmd-marks-unverified")
        #expect(Self.anchor("/stats") == "stats")
        #expect(Self.pageNames(in: "see design.md, docs/gateway.md and ../docs/x.md; $tag.md OUT/nightly.md NAME.md")
                == ["design.md", "docs/gateway.md", "../docs/x.md"])
    }
}
