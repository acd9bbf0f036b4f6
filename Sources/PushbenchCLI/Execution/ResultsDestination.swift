import Foundation
import PushMetrics
import PushVocabulary
#if canImport(Glibc)
import Glibc
#endif

/// Where a run's results go: the `--out` root, checked before any traffic; and when writing there fails
/// at the end anyway (a disk that filled during the run), a fallback folder under the temporary
/// directory, so nothing measured is lost. The exit status then says so (``fallbackStatus``).
final class ResultsDestination {
    /// The root the user asked for.
    let root: URL
    /// The root written to instead, once writing to ``root`` failed.
    private(set) var fallback: URL?
    /// Why writing to ``root`` failed, for the closing message.
    private(set) var failure: String?
    /// Bookkeeping beside a written folder that failed (`latest`, history.csv): worth a warning only.
    private(set) var warnings: [String] = []

    /// Exit status of a run whose results are complete but not where `--out` said.
    static let fallbackStatus: Int32 = 5

    init(root: URL) { self.root = root }

    /// The folder runs fall back to: `$TMPDIR/pushbench-results` (or /tmp's).
    static var fallbackRoot: URL { FileManager.default.temporaryDirectory.appendingPathComponent("pushbench-results") }

    /// Checks the root before any traffic: exit 2 naming it and the reason.
    func check() throws(RunExecution.Failure) {
        do { try ResultsWriter.checkRoot(root) } catch {
            throw RunExecution.Failure(status: 2, message: "--out: \(error)")
        }
    }

    /// The run folder for a run whose measured phase starts at `startedAt`, created under the root now,
    /// with the partial files its seconds are streamed to; nil (with a warning) when that fails, and the
    /// run then keeps its seconds in memory as before.
    func openSpool(startedAt: Date, label: String) -> TimelineSpool? {
        do {
            let folder = try ResultsWriter.reserveFolder(root: fallback ?? root, startedAt: startedAt, label: label)
            do { return try TimelineSpool(folder: folder, startedAt: startedAt, version: PushbenchVersion.current) } catch {
                rmdir(folder.path)
                throw error
            }
        } catch {
            warnings.append("the per-second results were kept in memory, not streamed to the run folder: \(error)")
            return nil
        }
    }

    /// Writes `record` as a run folder under the root (or the fallback, once the root failed) and returns it;
    /// with `spool`, its per-second files from what was streamed.
    func write(_ record: RunRecord, spool: TimelineSpool? = nil) throws(RunExecution.Failure) -> URL {
        if let spool, let why = spool.failure {
            warnings.append("writing the per-second results stopped after \(spool.secondsOnDisk) s (\(why)); "
                            + "the \(spool.held.count) seconds after were kept in memory and are in the files")
        }
        do { return try write { root in try ResultsWriter.write(record, root: root, spool: spool) } } catch {
            throw RunExecution.Failure(status: 1, message: "cannot write the results anywhere: \(error.message)"
                                       + (spool.map { "; the seconds streamed so far are in \($0.folder.path)" } ?? ""))
        }
    }

    /// Runs `body` against the root in force, falling back once when it fails.
    func write(_ body: (URL) throws -> URL) throws(RunExecution.Failure) -> URL {
        let first = fallback ?? root
        do {
            return try body(first)
        } catch let e as ResultsError where e.folderWritten != nil {
            warnings.append(e.description)
            return e.folderWritten!
        } catch {
            guard fallback == nil else { throw RunExecution.Failure(status: 1, message: "\(error)") }
            failure = "\(error)"
            let other = Self.fallbackRoot
            fallback = other
            do { return try body(other) } catch let e as ResultsError where e.folderWritten != nil {
                warnings.append(e.description)
                return e.folderWritten!
            } catch {
                throw RunExecution.Failure(status: 1, message: "\(failure ?? ""); then \(error)")
            }
        }
    }

    /// What to tell the user at the end (stderr), and the exit status it calls for (nil: no change).
    func closingMessages() -> (lines: [String], status: Int32?) {
        var lines = warnings.map { "warning: \($0)" }
        guard let fallback, let failure else { return (lines, nil) }
        lines.append("could not write the results under \(root.path) (\(failure)); they were written under \(fallback.path)"
                     + " instead, complete. Any files already in the first folder are whole, the rest are missing.")
        return (lines, Self.fallbackStatus)
    }
}
