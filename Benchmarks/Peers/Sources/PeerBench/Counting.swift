import Foundation

/// Client instructions per operation, all threads: the benchmark runs itself as a child under
/// `valgrind --tool=callgrind` twice for a side and workload, once with `ops` operations and once
/// with none (the same start, connection, set-up and teardown), and takes the difference. Callgrind
/// sums every thread of the process (NIO's event loops, the concurrency pool, the library's) into
/// one total; `--toggle-collect` would count one thread only, so it is not used here.
struct Counting {
    let server: Server
    let shape: Shape
    let tables: Tables
    /// Where the callgrind files go.
    let directory: String

    /// Instructions of one child run, and what it printed.
    private func count(_ side: String, _ workload: Workload, ops: Int) throws -> (instructions: Double, digest: Digest) {
        let output = "\(directory)/callgrind.\(side).\(workload.rawValue).\(ops)"
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = [
            "valgrind", "--tool=callgrind", "--callgrind-out-file=\(output)",
            try ownExecutable(), "child", side, workload.rawValue, String(ops),
            "--rows", String(shape.rows), "--groups", String(shape.groups),
        ]
        var environment = ProcessInfo.processInfo.environment
        environment["AR_TEST_POSTGRES"] = server.conninfo
        process.environment = environment
        // Valgrind's own messages go to a file, so that neither pipe can fill while the other is read.
        let messages = "\(output).log"
        process.arguments?.insert("--log-file=\(messages)", at: 2)
        let stdout = Pipe()
        process.standardOutput = stdout
        try process.run()
        let printed = String(decoding: stdout.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        let complaints = (try? String(contentsOfFile: messages, encoding: .utf8)) ?? ""
        try? FileManager.default.removeItem(atPath: messages)
        guard process.terminationStatus == 0 else {
            throw PeerError("the counted run of \(side) \(workload.rawValue) \(ops) failed (\(process.terminationStatus)):\n\(printed)\(complaints)")
        }
        guard let line = printed.split(separator: "\n").first(where: { $0.hasPrefix("digest ") }),
              let digest = Digest(parsing: line.dropFirst("digest ".count)) else {
            throw PeerError("the counted run of \(side) \(workload.rawValue) printed no digest:\n\(printed)")
        }
        let profile = try String(contentsOfFile: output, encoding: .utf8)
        try? FileManager.default.removeItem(atPath: output)
        for prefix in ["summary: ", "totals: "] {
            if let total = profile.split(separator: "\n").first(where: { $0.hasPrefix(prefix) }),
               let value = Double(total.dropFirst(prefix.count).split(separator: " ")[0]) {
                return (value, digest)
            }
        }
        throw PeerError("\(output): no instruction total")
    }

    /// Instructions per counted unit of `ops` operations of `workload` on `side`, all checked.
    func perUnit(_ side: String, _ workload: Workload, ops: Int) async throws -> Double {
        try await tables.reset(for: workload)
        let idle = try count(side, workload, ops: 0)
        try Check.equal(idle.digest, Digest(), "\(side) \(workload.title): the run with no operations read nothing")
        try await tables.reset(for: workload)
        let busy = try count(side, workload, ops: ops)
        let expected = tables.expectedDigest(workload, ops: ops)
        try Check.equal(busy.digest, expected, "\(side) \(workload.title) (\(ops) ops, counted): what it read")
        try await tables.check(after: workload, ops: ops, side: side)
        return (busy.instructions - idle.instructions) / Double(ops * workload.units(rows: shape.rows, groups: shape.groups))
    }
}

/// The running executable's path (the counted runs start it again as a child).
func ownExecutable() throws -> String {
    try FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")
}
