import Foundation
import Testing
@testable import PushPayload

/// A file the user names that cannot be read fails with the reason in words, each provoked for real.
@Suite struct InputFileTests {
    /// A fresh folder for one test, removed after it.
    func withFolder(_ body: (String) throws -> Void) throws {
        let folder = NSTemporaryDirectory() + "pushbench-inputfile-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: false)
        defer { try? FileManager.default.removeItem(atPath: folder) }
        try body(folder)
    }

    func failure(_ path: String) -> InputFileError? {
        do { _ = try InputFile.bytes(path); return nil } catch { return error }
    }

    @Test func aFolderGivenAsTheFileSaysSo() throws {
        try withFolder { folder in
            #expect(failure(folder) == InputFileError(path: folder, reason: "is a folder, not a file"))
        }
    }

    @Test func aPathThroughAFileSaysAPartIsNotAFolder() throws {
        try withFolder { folder in
            try Data("{}".utf8).write(to: URL(fileURLWithPath: folder + "/payload.json"))
            let path = folder + "/payload.json/inner.json"
            #expect(failure(path) == InputFileError(path: path, reason: "a part of the path is not a folder"))
        }
    }

    /// Root reads a mode-000 file regardless, so the read is made on a thread whose file-system uid is
    /// `nobody` (setfsuid is per thread, and dropping it from 0 drops the file capabilities with it);
    /// run as another user, the mode alone refuses it.
    @Test func anUnreadableFileSaysPermissionDenied() throws {
        try withFolder { folder in
            let path = folder + "/payload.json"
            try Data("{}".utf8).write(to: URL(fileURLWithPath: path))
            #expect(chmod(path, 0) == 0)
            typealias SetFSUID = @convention(c) (UInt32) -> Int32
            let symbol = try #require(dlsym(nil, "setfsuid"))
            let setfsuid = unsafeBitCast(symbol, to: SetFSUID.self)
            nonisolated(unsafe) var result: InputFileError?
            let done = DispatchSemaphore(value: 0)
            let thread = Thread {
                let previous = setfsuid(65534)
                result = failure(path)
                _ = setfsuid(UInt32(previous))
                done.signal()
            }
            thread.start()
            done.wait()
            #expect(result == InputFileError(path: path, reason: "permission denied"))
            if geteuid() == 0 {
                // Only the reading thread was restricted: root's other threads still read it.
                #expect(throws: Never.self) { _ = try InputFile.bytes(path) }
            }
        }
    }

    @Test func everyReasonIsWords() {
        #expect(InputFile.reason(ENOENT) == "no such file")
        #expect(InputFile.reason(EPERM) == "permission denied")
        #expect(InputFile.reason(EACCES) == "permission denied")
    }
}
